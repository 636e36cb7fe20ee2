//! The library in a dozen lines: open an agent's memory over the bundled example
//! workspace, bring its index up to date, search, and read the lines a hit cites.
//!
//! `cargo run --example search -- "postgres cutover downtime"`

use memoria::config::{Env, ProviderKind, Settings};
use memoria::{Memory, SearchOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let query = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "postgres cutover".into());
    let state = std::env::temp_dir().join("memoria-example-search");
    let env = Env {
        state_dir: Some(state),
        ..Env::from_process()
    };
    // OpenClaw's defaults for agent `main`; here keyword-only, over the example workspace.
    let mut settings = Settings::builtin("main", &env);
    settings.workspace =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace");
    settings.provider = ProviderKind::None;

    let memory = Memory::open(settings)?;
    let report = memory.sync(false, &|_| {})?;
    println!("{} files, {} chunks indexed", report.files, report.chunks);

    let payload = memory.memory_search(&query, &SearchOptions::default());
    for hit in &payload.results {
        println!(
            "{:.3}  {}#L{}-L{}",
            hit.score, hit.path, hit.start_line, hit.end_line
        );
    }
    if let Some(best) = payload.results.first() {
        let lines = (best.end_line - best.start_line + 1) as i64;
        let cited = memory.memory_get(&best.path, Some(best.start_line as i64), Some(lines));
        println!("---\n{}", cited.text);
    }
    Ok(())
}
