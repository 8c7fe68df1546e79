//! `sbsuite report`: a real run (the cpu engine at 1 and 2 threads) drawn as one HTML page,
//! its charts as standalone SVG files (parsed as XML), two runs overlaid, failed rows, bad
//! input, and the page rendered by headless Chromium (Debian's `chromium`).

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use common::sbsuite;

/// Runs a small cpu suite (threads 1 and 2, 1 s each, interim lines every second) into `root`
/// and returns the run directory. Its own suite file: the quickstart also runs OLTP on the
/// shared default `sbtest.db`, which parallel tests must not share.
fn real_run(root: &Path) -> PathBuf {
    std::fs::create_dir_all(root).unwrap();
    let suite = root.join("quickstart.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"quickstart\"\n\n[defaults]\nworkload = \"cpu\"\ntime = 1\nreport_interval = 1\n\n[matrix]\nthreads = [1, 2]\n",
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .args(["--quiet", "--results-dir"])
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dirs: Vec<PathBuf> = std::fs::read_dir(root.join("quickstart"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn report(args: &[&std::ffi::OsStr]) -> std::process::Output {
    sbsuite().arg("report").args(args).output().unwrap()
}

/// No resource the browser would fetch: no scripts, no links, no external images or fonts.
fn assert_self_contained(html: &str) {
    for bad in [
        "http://", "https://", "<script", " src=", " href=", "url(", "@import",
    ] {
        assert!(!html.contains(bad), "the page contains {bad:?}");
    }
}

#[test]
fn report_of_a_real_run_is_one_self_contained_page_with_svg_files() {
    let tmp = tempfile::tempdir().unwrap();
    let run = real_run(tmp.path());
    let svg_dir = tmp.path().join("svg");
    let out = report(&[run.as_os_str(), "--svg".as_ref(), svg_dir.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Default output: RUN/report.html.
    let page = run.join("report.html");
    assert!(
        stdout.contains(&format!("wrote {}", page.display())),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    assert!(html.starts_with("<!DOCTYPE html>"));

    // Charts: eps, p95, p99 against threads, and the time series of the two steps.
    for title in [
        "Events per second vs threads",
        "p95 latency vs threads",
        "p99 latency vs threads",
        "cpu: eps over time",
        "cpu: p95 latency over time",
    ] {
        assert!(html.contains(&format!("<title>{title}</title>")), "{title}");
    }
    assert_eq!(html.matches("<svg ").count(), 5);
    for label in [
        "threads (log2 scale)",
        "eps (events/s)",
        "p95 latency (ms)",
        "p99 latency (ms)",
        "time (s)",
        "threads=1",
        "threads=2",
    ] {
        assert!(html.contains(label), "missing {label:?}");
    }
    // The summary table with both steps, and the suite as it ran.
    assert!(html.contains("<table>"));
    assert!(html.contains("<td>cpu-t1</td>") && html.contains("<td>cpu-t2</td>"));
    assert_eq!(html.matches("<tr class=\"ok\">").count(), 2);
    assert!(
        html.contains("name = &quot;quickstart&quot;"),
        "suite.toml is shown"
    );
    assert!(html.contains("No server variables were captured"));

    // Standalone SVG files: valid XML, SVG namespace, one per chart.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&svg_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 5, "{files:?}");
    assert!(stdout.contains("wrote 5 SVG charts"), "{stdout}");
    for f in &files {
        assert_eq!(f.extension().unwrap(), "svg");
        let text = std::fs::read_to_string(f).unwrap();
        let doc = roxmltree::Document::parse(&text)
            .unwrap_or_else(|e| panic!("{} is not XML: {e}", f.display()));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert_eq!(
            root.tag_name().namespace(),
            Some("http://www.w3.org/2000/svg")
        );
        assert!(root.children().any(|n| n.has_tag_name("title")));
        assert!(
            root.descendants().any(|n| n.has_tag_name("circle")),
            "{} has no data point",
            f.display()
        );
    }
    assert!(svg_dir.join("throughput-eps-cpu.svg").is_file());

    // A results.csv path works as well as its directory.
    let other = tmp.path().join("elsewhere/page.html");
    let out = report(&[
        run.join("results.csv").as_os_str(),
        "--out".as_ref(),
        other.as_os_str(),
    ]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(&other)
            .unwrap()
            .matches("<svg ")
            .count(),
        5
    );
}

#[test]
fn two_runs_are_overlaid_and_the_legend_says_which() {
    let tmp = tempfile::tempdir().unwrap();
    let a = real_run(&tmp.path().join("a"));
    let b = real_run(&tmp.path().join("b"));
    let page = tmp.path().join("ab.html");
    let out = report(&[
        a.as_os_str(),
        b.as_os_str(),
        "--out".as_ref(),
        page.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    assert!(html.contains("cpu · run A") && html.contains("cpu · run B"));
    assert!(html.contains("threads=1 · run A") && html.contains("threads=2 · run B"));
    assert!(html.contains("stroke-dasharray"), "run B is dashed");
    assert!(html.contains("<th>run</th>"));
    assert_eq!(html.matches("<tr class=\"ok\">").count(), 4);
}

/// A results.csv written by hand: the columns of `sbsuite run`, one measured row, one failed.
fn handmade_run(dir: &Path, rows: &[&[(&str, &str)]]) {
    std::fs::create_dir_all(dir).unwrap();
    let header = sbsuite::results::results_columns(&["workload".into(), "threads".into()]);
    let mut w = csv::Writer::from_path(dir.join("results.csv")).unwrap();
    w.write_record(&header).unwrap();
    for row in rows {
        let rec: Vec<&str> = header
            .iter()
            .map(|h| row.iter().find(|(c, _)| c == h).map_or("", |(_, v)| v))
            .collect();
        w.write_record(rec).unwrap();
    }
    w.flush().unwrap();
}

#[test]
fn failed_rows_are_marked_and_a_single_point_is_drawn() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    handmade_run(
        &dir,
        &[
            &[
                ("run_id", "r1"),
                ("step", "1"),
                ("name", "ro-t8"),
                ("variant", "default"),
                ("workload", "oltp_read_only"),
                ("threads", "8"),
                ("repetition", "1"),
                ("eps", "100"),
                ("tps", "100"),
                ("qps", "1600"),
                ("lat_p95", "12.5"),
                ("status", "ok"),
            ],
            &[
                ("run_id", "r1"),
                ("step", "2"),
                ("name", "ro-t16"),
                ("variant", "default"),
                ("workload", "oltp_read_only"),
                ("threads", "16"),
                ("repetition", "1"),
                ("status", "failed"),
                ("error", "server <gone> & away"),
            ],
        ],
    );
    let out = report(&[dir.as_os_str()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // tps, qps and p95 charts (no p99 measured anywhere: no p99 chart).
    assert!(html.contains("<title>Transactions per second vs threads</title>"));
    assert!(html.contains("<title>Queries per second vs threads</title>"));
    assert!(html.contains("<title>p95 latency vs threads</title>"));
    assert!(!html.contains("p99 latency vs threads"));
    // The one measured point is drawn (as a marker, no line), the failed step is an × on the
    // axis with its error, escaped.
    assert!(html.contains("oltp_read_only: threads (log2 scale) = 8, tps (transactions/s) = 100"));
    assert!(html.contains("step 2 ro-t16: failed (server &lt;gone&gt; &amp; away)"));
    assert!(html.contains("<tr class=\"failed\">"));
    assert!(html.contains("No interim reports"));
}

#[test]
fn without_a_varying_axis_the_x_axis_is_the_step() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let row = |step: &'static str, workload: &'static str| -> Vec<(&'static str, &'static str)> {
        vec![
            ("step", step),
            ("name", workload),
            ("variant", "default"),
            ("workload", workload),
            ("threads", "4"),
            ("repetition", "1"),
            ("eps", "50"),
            ("lat_p95", "2"),
            ("status", "ok"),
        ]
    };
    let (a, b) = (row("1", "cpu"), row("2", "threads"));
    handmade_run(&dir, &[&a, &b]);
    let out = report(&[dir.as_os_str()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("x axis is the step number"));
    // Two non-SQL workloads: a chart each, titled with the workload.
    assert!(html.contains("<title>cpu: Events per second vs step</title>"));
    assert!(html.contains("<title>threads: Events per second vs step</title>"));
}

#[test]
fn bad_input_exits_2_and_names_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let out = report(&[missing.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{} does not exist", missing.display())),
        "{err}"
    );

    let out = report(&[tmp.path().as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not a run directory: it has no results.csv"),
        "{err}"
    );

    let bad = tmp.path().join("results.csv");
    std::fs::write(&bad, "a,b\n1,2\n").unwrap();
    let out = report(&[bad.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no `step` column"), "{err}");
    assert!(err.contains(&bad.display().to_string()), "{err}");

    let out = report(&[bad.as_os_str(), bad.as_os_str(), bad.as_os_str()]);
    assert_eq!(out.status.code(), Some(2), "at most two runs");
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The distinct RGB colours of a PNG, and whether it holds pixels close to `rgb`.
fn png_colours(path: &Path, rgb: [u8; 3]) -> (usize, bool) {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut reader = png::Decoder::new(file).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let mut seen = std::collections::HashSet::new();
    let mut found = false;
    for px in buf[..info.buffer_size()].chunks(channels) {
        let c = [px[0], px[1], px[2]];
        found |= c.iter().zip(rgb).all(|(a, b)| a.abs_diff(b) <= 12);
        seen.insert(c);
    }
    (seen.len(), found)
}

#[test]
fn headless_chromium_renders_the_charts() {
    let Some(browser) = chromium() else {
        common::skip("chromium is not installed (apt-get install -y chromium, as .ci/run does)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let run = real_run(&tmp.path().join("results"));
    let out = report(&[run.as_os_str()]);
    assert!(out.status.success());
    let page = run.join("report.html");
    let shot = tmp.path().join("shot.png");
    let mut child = StdCommand::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!(
            "--user-data-dir={}",
            tmp.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2000")
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A guard against a browser that hangs, not a timing assertion.
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish its screenshot in 300 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "chromium failed: {status}");
    let size = std::fs::metadata(&shot).unwrap().len();
    assert!(size > 20_000, "screenshot is only {size} bytes");
    // Charts drawn: many colours (text antialiasing, grid, lines), among them the first
    // series colour (#4e79a7); a blank or single-colour page fails.
    let (colours, series_colour) = png_colours(&shot, [0x4e, 0x79, 0xa7]);
    assert!(
        colours > 50,
        "only {colours} distinct colours in the screenshot"
    );
    assert!(
        series_colour,
        "no pixel of the first line's colour: the charts did not render"
    );
}

/// #14: a run of two variants is shown per variant: per metric a row per matrix point and a
/// column per variant, with the change and verdict of `sbsuite compare --by variant` (here the
/// paired test, since the variants ran interleaved).
#[test]
fn a_variant_study_is_grouped_by_variant_with_the_comparisons_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    // threads 8: tuned ~5 % faster in every pair despite drift; threads 16: the same.
    let data = [
        ("8", [(718, 760), (843, 880), (951, 1001)]),
        ("16", [(900, 910), (1000, 990), (1100, 1105)]),
    ];
    let mut owned: Vec<Vec<(&str, String)>> = Vec::new();
    let mut step = 0;
    for (threads, pairs) in &data {
        for (rep, (a, b)) in pairs.iter().enumerate() {
            for (variant, tps) in [("baseline", a), ("tuned", b)] {
                step += 1;
                owned.push(vec![
                    ("run_id", "r1".into()),
                    ("step", step.to_string()),
                    ("name", format!("ro-t{threads}")),
                    ("variant", variant.into()),
                    ("workload", "oltp_read_only".into()),
                    ("threads", threads.to_string()),
                    ("repetition", (rep + 1).to_string()),
                    ("eps", tps.to_string()),
                    ("tps", tps.to_string()),
                    ("status", "ok".into()),
                ]);
            }
        }
    }
    let rows: Vec<Vec<(&str, &str)>> = owned
        .iter()
        .map(|r| r.iter().map(|(c, v)| (*c, v.as_str())).collect())
        .collect();
    let refs: Vec<&[(&str, &str)]> = rows.iter().map(Vec::as_slice).collect();
    handmade_run(&dir, &refs);
    std::fs::write(
        dir.join("suite.toml"),
        "[suite]\nname = \"v\"\nrepeat = 3\nvariant_order = \"interleaved\"\n",
    )
    .unwrap();
    let out = report(&[dir.as_os_str()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_self_contained(&html);
    // The throughput chart: one line per variant across the matrix points (threads).
    assert!(html.contains("<title>Transactions per second vs threads</title>"));
    for variant in ["baseline", "tuned"] {
        assert!(
            html.contains(&format!(
                "oltp_read_only · {variant}: threads (log2 scale) = 16"
            )),
            "{variant}"
        );
    }
    let section = &html[html
        .find("<h2 id=\"variants\">Variants</h2>")
        .expect("a variants section")
        ..html.find("<h2 id=\"time-series\">").unwrap()];
    assert!(
        section.contains("variant=baseline → variant=tuned: paired t-test over 3 pairs per key"),
        "{section}"
    );
    assert!(
        section.contains("<h3>tps (higher is better)</h3>"),
        "{section}"
    );
    assert!(
        section.contains("<tr><th>matrix point</th><th>baseline</th><th>tuned</th><th>change</th><th>verdict</th></tr>"),
        "{section}"
    );
    // One row per matrix point, each variant's median in its column; the same verdicts as
    // `sbsuite compare --by variant`.
    let row = |threads: &str| {
        let start = section
            .find(&format!(
                "<tr><td>workload=oltp_read_only threads={threads}</td>"
            ))
            .unwrap_or_else(|| panic!("no row for threads={threads}: {section}"));
        &section[start..start + section[start..].find("</tr>").unwrap()]
    };
    let t8 = row("8");
    assert!(t8.contains(">843.0 ") && t8.contains(">880.0 "), "{t8}");
    assert!(t8.contains("<td class=\"better\">better (p 0.0"), "{t8}");
    let t16 = row("16");
    assert!(t16.contains("<td class=\"\">~ (p "), "{t16}");
    let compare = sbsuite()
        .args(["compare", "--by", "variant"])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&compare.stdout);
    let verdicts: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("workload=") && l.contains(" tps "))
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(verdicts, ["better", "~"], "{text}");
}
