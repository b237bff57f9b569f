//! `holdfast demo` as a process: the incident replayed under each policy on
//! a virtual clock — `standard` restarts the job, `session` lets two
//! leaders act at once, `lease` does neither — and, with
//! `--timeline-dir`, each replay's HA timeline written as the dashboard
//! draws it, plus one page with all three.

mod support;

use anyhow::{Result, ensure};

#[tokio::test]
async fn the_demo_replays_the_incident_and_writes_its_timelines() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let args = ["demo", "--timeline-dir", &dir.path().display().to_string()];
    let out = support::run(&args).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "holdfast demo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |policy: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(policy) && l.contains("job restarts"))
            .unwrap_or_default()
            .to_owned()
    };
    ensure!(
        !line("standard").contains("job restarts: 0 "),
        "standard restarts: {stdout}"
    );
    ensure!(
        line("session").ends_with("two leaders at once: YES"),
        "session: {stdout}"
    );
    let lease = line("lease");
    ensure!(
        lease.contains("job restarts: 0 ") && lease.ends_with("two leaders at once: no"),
        "lease: {stdout}"
    );

    let read = |name: &str| std::fs::read_to_string(dir.path().join(name));
    let standard = read("demo-standard.html")?;
    ensure!(
        standard.contains(r#"data-kind="job-restart""#),
        "standard's restarts drawn"
    );
    // Under `session` jm-1's leadership ends only after jm-2's grant: two
    // leaders at once (the events table lists the newest first).
    let session = read("demo-session.html")?;
    // Where the first row of `kind` of `process` starts.
    let row = |process: &str, kind: &str| {
        session
            .match_indices(r#"<tr class="event""#)
            .map(|(i, _)| i)
            .find(|&i| {
                let tag = session[i..].split('>').next().unwrap_or_default();
                tag.contains(&format!(r#"data-process="{process}""#))
                    && tag.contains(&format!(r#"data-kind="{kind}""#))
            })
    };
    let (ended, granted) = (row("jm-1", "leader-ended"), row("jm-2", "leader"));
    ensure!(
        matches!((ended, granted), (Some(end), Some(grant)) if end < grant),
        "session: jm-1's end listed before (newer than) jm-2's grant: {ended:?} {granted:?}"
    );
    let lease_page = read("demo-lease.html")?;
    ensure!(
        lease_page.contains(r#"data-kind="take-over""#)
            && !lease_page.contains(r#"data-kind="job-restart""#),
        "lease: a take-over, no restart"
    );
    for policy in ["standard", "session", "lease"] {
        let svg = read(&format!("demo-{policy}.svg"))?;
        ensure!(
            svg.starts_with("<svg") && svg.contains(r#"data-process="tm-1""#),
            "{policy}: the picture"
        );
    }
    let all = read("demo.html")?;
    ensure!(
        all.matches(r#"<section class="timeline-section">"#).count() == 3,
        "one page with all three replays"
    );
    ensure!(
        stdout.trim_end().ends_with("demo.html"),
        "the combined page's path on the last line"
    );
    Ok(())
}
