//! The tools' arguments: parsing, errors and schemas.

use serde_json::json;

use super::*;

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn search(value: Value) -> Result<SearchArgs, String> {
    parse(&object(value))
}

#[test]
fn argument_table() {
    let cases: &[(Value, Result<Option<usize>, &str>)] = &[
        (json!({}), Ok(None)),
        (json!({"maxResults": null}), Ok(None)),
        (json!({"maxResults": 3}), Ok(Some(3))),
        (json!({"maxResults": 3.0}), Ok(Some(3))),
        (
            json!({"maxResults": 0}),
            Err("`maxResults`: expected a whole number of at least 1, got 0"),
        ),
        (
            json!({"maxResults": 2.5}),
            Err("`maxResults`: expected a whole number of at least 1, got 2.5"),
        ),
        (
            json!({"maxResults": "3"}),
            Err("`maxResults`: expected a whole number of at least 1, got \"3\""),
        ),
        (
            json!({"maxResults": -1}),
            Err("`maxResults`: expected a whole number of at least 1, got -1"),
        ),
        (
            json!({"maxResults": 5e9}),
            Err("`maxResults`: expected a whole number of at least 1, got 5000000000.0"),
        ),
    ];
    for (input, expected) in cases {
        let mut input = input.clone();
        input["query"] = json!("x");
        let got = search(input.clone()).map(|args| args.max_results.map(|n| n.0));
        assert_eq!(got, expected.map_err(str::to_string), "{input}");
    }
    let args = search(json!({"query": "x", "minScore": 0.5})).unwrap();
    assert_eq!(args.min_score, Some(Fraction(0.5)));
    let messages = [
        (
            json!({"query": "x", "minScore": 1.5}),
            "`minScore`: expected a number from 0 to 1, got 1.5",
        ),
        (json!({"query": 7}), "`query`: expected a string, got 7"),
        (json!({}), "`query` is required"),
        (json!({"query": null}), "`query` is required"),
        (
            json!({"query": "x", "corpus": "mail"}),
            "`corpus`: expected memory, sessions, wiki or all, got \"mail\"",
        ),
        (
            json!({"query": "x", "corpus": 7}),
            "`corpus`: expected a string, got 7",
        ),
        (
            json!({"query": "x", "chatType": "dm"}),
            "`chatType`: expected direct, group or channel, got \"dm\"",
        ),
        (
            json!({"query": "x", "channel": ["a"]}),
            "`channel`: expected a string, got [\"a\"]",
        ),
        (
            json!({"query": "x", "limit": 3}),
            "unknown argument `limit` (expected query, maxResults, minScore, corpus, \
             chatType, channel, sessionKey, lexicalOnly, activeProjectKeys, agent)",
        ),
        (
            json!({"query": "x", "limit": null}),
            "unknown argument `limit` (expected query, maxResults, minScore, corpus, \
             chatType, channel, sessionKey, lexicalOnly, activeProjectKeys, agent)",
        ),
        (
            json!({"query": "x", "agent": 1}),
            "`agent`: expected a string, got 1",
        ),
        // Several errors: an unknown key first, then the fields in declaration order.
        (
            json!({"query": "x", "maxResults": 0, "zzz": 1}),
            "unknown argument `zzz` (expected query, maxResults, minScore, corpus, \
             chatType, channel, sessionKey, lexicalOnly, activeProjectKeys, agent)",
        ),
        (json!({"maxResults": 0}), "`query` is required"),
        (
            json!({"query": "x", "sessionKey": 1, "corpus": "mail"}),
            "`corpus`: expected memory, sessions, wiki or all, got \"mail\"",
        ),
    ];
    for (input, message) in messages {
        assert_eq!(
            search(input.clone()).err().as_deref(),
            Some(message),
            "{input}"
        );
    }
    let (query, options) = search(json!({"query": "q", "maxResults": 2, "corpus": "memory",
        "chatType": "group", "channel": "discord", "sessionKey": null, "lexicalOnly": true,
        "activeProjectKeys": ["github.com/acme/api"]}))
    .unwrap()
    .into_search();
    assert_eq!(query, "q");
    assert_eq!(
        options,
        SearchOptions {
            max_results: Some(2),
            min_score: None,
            corpus: Corpus::Memory,
            chat: Chat {
                chat_type: ChatType::Group,
                channel: Some("discord".into()),
                session_key: None,
            },
            lexical_only: true,
            active_project_keys: vec!["github.com/acme/api".into()],
            trace: false,
        }
    );
}

#[test]
fn other_tools_arguments() {
    let get: GetArgs = parse(&object(json!({"path": "MEMORY.md", "from": 2}))).unwrap();
    assert_eq!((get.from, get.lines), (Some(Count(2)), None));
    let err = parse::<GetArgs>(&object(json!({"path": "MEMORY.md", "from": "2"})));
    assert_eq!(
        err.err().as_deref(),
        Some("`from`: expected a whole number of at least 1, got \"2\"")
    );
    // A citation as memory_search returns it reads its range (MCP and CLI alike).
    for path in ["memory/2026-03-02.md#L1-L6", "memory/2026-03-02.md:1-6"] {
        let get: GetArgs = parse(&object(json!({"path": path, "corpus": "all"}))).unwrap();
        let request = get.into_get().unwrap();
        assert_eq!(
            (
                request.path.as_str(),
                request.from,
                request.lines,
                request.corpus
            ),
            ("memory/2026-03-02.md", Some(1), Some(6), Corpus::All)
        );
    }
    let get: GetArgs = parse(&object(json!({"path": "MEMORY.md#L2", "lines": 3}))).unwrap();
    assert_eq!(
        get.into_get().unwrap_err(),
        "MEMORY.md#L2 names a line range already: drop from/lines, or the range"
    );
    let err = parse::<AppendArgs>(&object(json!({"date": "2030-01-02"})));
    assert_eq!(err.err().as_deref(), Some("`text` is required"));
    for (input, private) in [(json!({}), false), (json!({"private": null}), false)] {
        let args: ContextArgs = parse(&object(input)).unwrap();
        assert_eq!(args.private(), private);
    }
    let args: ContextArgs = parse(&object(json!({"private": true}))).unwrap();
    assert!(args.private());
    let err = parse::<ContextArgs>(&object(json!({"private": "yes"})));
    assert_eq!(
        err.err().as_deref(),
        Some("`private`: expected true or false")
    );
}

#[test]
fn command_line_numbers() {
    assert_eq!("3".parse(), Ok(Count(3)));
    assert_eq!(
        "0".parse::<Count>(),
        Err("expected a whole number of at least 1".into())
    );
    assert_eq!("0.25".parse(), Ok(Fraction(0.25)));
    assert_eq!(
        "1.5".parse::<Fraction>(),
        Err("expected a number from 0 to 1".into())
    );
}

/// The schemas the tools listed before they came from the types, key for key (and the
/// arguments added since: `lexicalOnly`, `memory_status`).
#[test]
fn schemas() {
    let search = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to recall, in natural language or keywords."},
            "maxResults": {"type": "integer", "minimum": 1, "description": "Results to return (default: query.maxResults, 6)."},
            "minScore": {"type": "number", "minimum": 0, "maximum": 1, "description": "Lowest score returned (default: query.minScore, 0.35)."},
            "corpus": {"type": "string", "enum": ["memory", "sessions", "wiki", "all"], "description": "Which sources to search (default: every enabled source: memory files, transcripts\nwhen indexed, the memory-wiki vault when there is one)."},
            "chatType": {"type": "string", "enum": ["direct", "group", "channel"], "description": "The chat this search serves (default: direct). Citations are hidden in group and channel chats; with the QMD backend, memory.qmd.scope decides whether results are shown."},
            "channel": {"type": "string", "description": "The chat's channel (telegram, discord, …), for memory.qmd.scope."},
            "sessionKey": {"type": "string", "description": "The session key, for memory.qmd.scope's keyPrefix rules."},
            "lexicalOnly": {"type": "boolean", "description": "Keyword (BM25) scoring only, without embedding the query (default: false)."},
            "activeProjectKeys": {"type": "array", "items": {"type": "string"}, "description": "The session's active project keys, most recent first (OpenClaw keeps 4): under\nOpenClaw 2026.9's semantics, entries tagged <!-- project: … --> with all their keys\nhere rank x1.15, other tagged entries x0.90."},
        },
        "required": ["query"],
        "additionalProperties": false,
    });
    let get = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A memory file, relative to the workspace (MEMORY.md, memory/…), or a citation as\nmemory_search returns it (memory/x.md#L3-L8)."},
            "from": {"type": "integer", "minimum": 1, "description": "First line, 1-based (default: the whole file)."},
            "lines": {"type": "integer", "minimum": 1, "description": "Number of lines from `from`."},
            "corpus": {"type": "string", "enum": ["memory", "sessions", "wiki", "all"], "description": "Which corpus to read: memory (default), wiki (a memory-wiki page by vault path,\nfile name or id), or all (a memory file, else the wiki page)."},
        },
        "required": ["path"],
        "additionalProperties": false,
    });
    let append = json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The note to keep: a line or a few (Markdown)."},
            "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "description": "The daily log to append to, YYYY-MM-DD (default: today, local time)."},
        },
        "required": ["text"],
        "additionalProperties": false,
    });
    let context = json!({
        "type": "object",
        "properties": {
            "private": {"type": "boolean", "description": "A private main session: MEMORY.md too (never in group or channel chats; default false)."},
        },
        "additionalProperties": false,
    });
    assert_eq!(Value::Object(schema::<SearchArgs>()), search);
    assert_eq!(Value::Object(schema::<GetArgs>()), get);
    assert_eq!(Value::Object(schema::<AppendArgs>()), append);
    assert_eq!(
        Value::Object(schema::<StatusArgs>()),
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    assert_eq!(Value::Object(schema::<ContextArgs>()), context);
}

#[test]
fn citation_table() {
    let cases = [
        ("memory/x.md#L3-L8", Some(("memory/x.md", 3, 6))),
        ("memory/x.md#L3", Some(("memory/x.md", 3, 1))),
        ("memory/x.md:3-8", Some(("memory/x.md", 3, 6))),
        ("memory/x.md:3", Some(("memory/x.md", 3, 1))),
        ("MEMORY.md#L1-L17", Some(("MEMORY.md", 1, 17))),
        ("memory/x.md", None),
        ("memory/x.md#L8-L3", None),
        ("memory/x.md#L0", None),
        ("memory/x.md:abc", None),
        ("memory/x.txt:3", None),
        ("C:/notes/x.md", None),
    ];
    for (text, want) in cases {
        assert_eq!(citation(text), want, "{text}");
    }
}
