//! Two agents in one process, each kept fresh by its own live sync, sharing one model.
//!
//! ```sh
//! cargo run --example live                                   # keyword-only
//! cargo run --release --example live -- /path/to/embeddinggemma-300m   # hybrid
//! ```
//!
//! Agent `main` reads the bundled example workspace; agent `scratch` a new one in a temporary
//! directory. The example starts both live syncs, writes a note into `scratch`'s workspace
//! (as an agent would), waits until the watcher has made it searchable, and searches both.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memoria::config::{Env, ProviderKind, Settings};
use memoria::{EmbedderChoice, LiveEvent, Memory, SearchOptions};

fn open(
    id: &str,
    workspace: PathBuf,
    state: &std::path::Path,
    model: Option<&PathBuf>,
) -> memoria::Result<Arc<Memory>> {
    let env = Env {
        home: Some(state.to_path_buf()),
        state_dir: Some(state.to_path_buf()),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin(id, &env);
    settings.workspace = workspace;
    settings.provider = if model.is_some() {
        ProviderKind::Local
    } else {
        ProviderKind::None
    };
    // Both agents name the same model directory: the process loads it once.
    let choice = EmbedderChoice::FromSettings {
        model_dir: model.cloned(),
        precision: None,
    };
    Ok(Arc::new(Memory::open_with(settings, choice)?))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = std::env::args_os().nth(1).map(PathBuf::from);
    let tmp = std::env::temp_dir().join(format!("memoria-example-live-{}", std::process::id()));
    let scratch_ws = tmp.join("scratch-workspace");
    std::fs::create_dir_all(scratch_ws.join("memory"))?;

    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/workspace");
    let main = open("main", example, &tmp, model.as_ref())?;
    let scratch = open("scratch", scratch_ws.clone(), &tmp, model.as_ref())?;

    // Each live sync: a sync now, then on every debounced file change (and on
    // sync.intervalMinutes). Events arrive on the live sync's own thread.
    let log = |agent: &'static str| {
        move |event: &LiveEvent| match event {
            LiveEvent::Synced(report) => println!(
                "[{agent}] synced {} files, {} chunks in {:.2}s",
                report.files, report.chunks, report.seconds
            ),
            other => println!("[{agent}] {other:?}"),
        }
    };
    let main_live = main.start_live(log("main"))?;
    let scratch_live = scratch.start_live(log("scratch"))?;

    // The first search waits for the agent's first index (there is nothing to answer from
    // before it); every later one answers at once.
    scratch.search("anything", &SearchOptions::default())?;
    // What the agent writes is searchable once the watcher's debounce (1.5 s) and a sync
    // have passed; searches meanwhile answer from the last index, never waiting.
    std::fs::write(
        scratch_ws.join("memory/2026-11-22.md"),
        "# 2026-11-22\n\n- Booked the ferry to Ischia for Saturday, 09:10 from Naples.\n",
    )?;
    let written = Instant::now();
    let options = SearchOptions::default();
    while scratch.search("ferry Ischia", &options)?.hits.is_empty() {
        if written.elapsed() > Duration::from_secs(30) {
            return Err("the new note was not indexed within 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "searchable {:.2}s after the write",
        written.elapsed().as_secs_f64()
    );

    for (agent, memory, query) in [
        ("scratch", &scratch, "when is the ferry?"),
        ("main", &main, "postgres cutover downtime"),
    ] {
        let payload = memory.memory_search(query, &options);
        println!("[{agent}] {query:?}: mode {:?}", payload.mode);
        for hit in &payload.results {
            println!(
                "  {}:{}-{}  {:.3}",
                hit.path, hit.start_line, hit.end_line, hit.score
            );
        }
        if let Some(live) = memory.status()?.live {
            println!("  watcher {:?}, {} syncs", live.watcher, live.syncs);
        }
    }

    // Stopping waits for a sync in progress to finish its batch; dropping does the same.
    main_live.stop();
    scratch_live.stop();
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}
