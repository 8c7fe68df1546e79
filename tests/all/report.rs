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
    // #29: the verdict of run B against run A is the one `sbsuite compare A B` prints.
    let out = sbsuite().arg("compare").args([&a, &b]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let verdict = text
        .lines()
        .find_map(|l| l.strip_prefix("verdict: "))
        .unwrap_or_else(|| panic!("{text}"));
    let start = html.find("<p class=\"headline\">").expect("a verdict");
    let shown = strip_tags(&html[start..start + html[start..].find("</p>").unwrap()]);
    assert_eq!(shown, format!("run B vs run A: {verdict}"));
}

/// The text of an HTML fragment: tags dropped, the page's few entities decoded.
fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
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

/// Runs headless Chromium with `args` (and a profile of its own in `profile`), its stdout to
/// `stdout`; its exit status. A guard against a browser that hangs, not a timing assertion.
fn headless(
    browser: &Path,
    profile: &Path,
    args: &[String],
    stdout: Stdio,
) -> std::process::ExitStatus {
    let mut child = StdCommand::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
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
    let status = headless(
        &browser,
        &tmp.path().join("profile"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".into(),
            format!("file://{}", page.display()),
        ],
        Stdio::null(),
    );
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

/// What headless Chromium rendered of a report: read by a script added to a copy of the page
/// (the report itself has none) and printed with `--dump-dom`. Positions are the browser's
/// layout (`getBoundingClientRect`), colours and dashes its computed style, texts what it
/// shows (`innerText`).
const PROBE: &str = r##"<script>
(() => {
  const num = t => { t = t.trim(); const m = {k: 1e3, M: 1e6}[t.slice(-1)];
                     return m ? parseFloat(t.slice(0, -1)) * m : parseFloat(t); };
  const box = e => e.getBoundingClientRect();
  const midY = e => { const r = box(e); return r.top + r.height / 2; };
  const charts = [...document.querySelectorAll('svg')].map(svg => ({
    title: svg.querySelector('title').textContent,
    ylabel: [...svg.querySelectorAll('text[transform]')].map(t => t.textContent).join(''),
    note: [...svg.querySelectorAll('text.note')].map(t => t.textContent).join(''),
    ticks: [...svg.querySelectorAll('line[stroke="#e6e6e6"]')]
      .map(l => [num(l.nextElementSibling.textContent), midY(l)]),
    legend: [...svg.querySelectorAll('g.legend text')].map(t => t.textContent),
    series: [...svg.querySelectorAll('g.series')].map(g => {
      const marks = [...g.children].filter(e => e.querySelector('title'));
      const line = [...g.children].find(e => e.tagName === 'polyline' && !e.querySelector('title'));
      return {
        label: g.dataset.series,
        stroke: line ? getComputedStyle(line).stroke : null,
        dash: line ? getComputedStyle(line).strokeDasharray : null,
        marks: marks.map(m => ({shape: m.tagName, stroke: getComputedStyle(m).stroke,
                                title: m.querySelector('title').textContent, y: midY(m)})),
        bars: [...g.querySelectorAll('line.bar')].map(b => [box(b).top, box(b).bottom]),
      };
    }),
  }));
  const tables = [...document.querySelectorAll('h3')].map(h => ({
    title: h.innerText,
    rows: h.nextElementSibling && h.nextElementSibling.tagName === 'TABLE'
      ? [...h.nextElementSibling.rows].map(r => [...r.cells].map(c => c.innerText)) : [],
  }));
  const out = {
    headlines: [...document.querySelectorAll('p.headline')].map(p => p.innerText),
    headline_classes: [...document.querySelectorAll('p.headline span')].map(s => [s.className, s.innerText]),
    warnings: [...document.querySelectorAll('.warn')].map(p => p.innerText),
    charts, tables,
  };
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"##;

/// The page at `page` as headless Chromium renders it ([`PROBE`]); `None` (a recorded skip)
/// without Chromium.
fn rendered(page: &Path) -> Option<serde_json::Value> {
    let Some(browser) = chromium() else {
        common::skip("chromium is not installed (apt-get install -y chromium, as .ci/run does)");
        return None;
    };
    let dir = page.parent().unwrap();
    let html = std::fs::read_to_string(page).unwrap();
    let probe = dir.join("probe.html");
    std::fs::write(&probe, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let dom = dir.join("dom.html");
    let status = headless(
        &browser,
        &dir.join("profile"),
        &[
            "--dump-dom".into(),
            "--window-size=1320,2000".into(),
            format!("file://{}", probe.display()),
        ],
        Stdio::from(std::fs::File::create(&dom).unwrap()),
    );
    assert!(status.success(), "chromium failed: {status}");
    let dom = std::fs::read_to_string(&dom).unwrap();
    let start = dom.find("<pre id=\"probe\">").expect("the probe ran") + 16;
    let text = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
}

/// `compare`'s number format (its `num`): 1 decimal from 100, 2 from 1, else 4.
fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// The headline `sbsuite compare --by variant --format json` implies for comparison `c`: per
/// headline metric present, at one matrix point the line's delta, interval and verdict, over
/// several the geomean and the count of each verdict; then the test.
fn expected_headline(c: &serde_json::Value, throughput: &str) -> String {
    let lines = c["lines"].as_array().unwrap();
    let mut parts = Vec::new();
    for metric in [
        "tps",
        "p95",
        "p99",
        "server_fsyncs_per_txn",
        "server_log_bytes_per_txn",
        "server_cpu_ms_per_txn",
        "client_cpu_us_per_txn",
    ] {
        let these: Vec<&serde_json::Value> =
            lines.iter().filter(|l| l["metric"] == metric).collect();
        let name = if metric == "tps" { throughput } else { metric };
        let word = |v: &str| {
            match v {
                "~" => "not significant",
                "n/a" => "untested",
                v => v,
            }
            .to_string()
        };
        match these.as_slice() {
            [] => continue,
            [l] => {
                let d = l["delta_pct"].as_f64().unwrap();
                let (lo, hi) = (l["delta_ci_low"].as_f64(), l["delta_ci_high"].as_f64());
                let interval = match (lo, hi) {
                    (Some(lo), Some(hi)) => format!(" [{lo:+.1}, {hi:+.1}]"),
                    _ => String::new(),
                };
                parts.push(format!(
                    "{name} {d:+.1}%{interval} {}",
                    word(l["verdict"].as_str().unwrap())
                ));
            }
            several => {
                let g = c["geomean"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|g| g[0] == metric)
                    .map(|g| format!("geomean {:+.1}% ", g[1].as_f64().unwrap()))
                    .unwrap_or_default();
                let counts: Vec<String> = ["better", "worse", "~", "n/a"]
                    .iter()
                    .map(|v| (v, several.iter().filter(|l| l["verdict"] == *v).count()))
                    .filter(|(_, n)| *n > 0)
                    .map(|(v, n)| format!("{n} {}", word(v)))
                    .collect();
                parts.push(format!(
                    "{name} {g}over {} points: {}",
                    several.len(),
                    counts.join(", ")
                ));
            }
        }
    }
    let mut method = c["test"].as_str().unwrap().to_string();
    if c["few_samples"] == true {
        method.push_str("; fewer than 6 samples on a side");
    }
    format!("{} ({method})", parts.join(", "))
}

/// `sbsuite compare RUN --by variant` in `format`: its stdout.
fn compare_by_variant(run: &Path, format: &str) -> String {
    let out = sbsuite()
        .args(["compare", "--by", "variant", "--format", format])
        .arg(run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The data value at pixel `y` of a chart, read from its rendered y ticks (a linear axis).
fn value_at(chart: &serde_json::Value, y: f64) -> (f64, f64) {
    let ticks = chart["ticks"].as_array().unwrap();
    let tick = |t: &serde_json::Value| (t[0].as_f64().unwrap(), t[1].as_f64().unwrap());
    let ((v0, y0), (v1, y1)) = (tick(&ticks[0]), tick(ticks.last().unwrap()));
    let per_px = (v1 - v0) / (y1 - y0);
    // Half a pixel either way, and the rounding of the SVG's coordinates (0.1 px).
    (v0 + (y - y0) * per_px, per_px.abs() * 0.7)
}

/// The rendered chart titled `title`.
fn chart<'v>(page: &'v serde_json::Value, title: &str) -> &'v serde_json::Value {
    page["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["title"] == title)
        .unwrap_or_else(|| panic!("no chart {title:?}"))
}

/// The checks of #29 on a rendered report of a run of two variants (`base`, `other`) at
/// threads 1 and 2, repeated: the headline is the one `compare` implies (and prints), each
/// point of the throughput chart is drawn at its variant's median and its bar spans the
/// tables' interval, the table shows that median, and the time series draw each repetition
/// as a series of its own. Returns the rendered page for more checks.
fn check_study(run: &Path, base: &str, other: &str, throughput_title: &str) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_str(&compare_by_variant(run, "json")).unwrap();
    let c = &json["comparisons"][0];
    // A workload without SQL: its throughput is eps, as the chart says.
    let throughput = if throughput_title.starts_with("Events") {
        "eps"
    } else {
        "tps"
    };
    let headline = expected_headline(c, throughput);
    // `compare`'s text says it in one line under the heading.
    let table = compare_by_variant(run, "table");
    assert_eq!(
        table.lines().nth(1).unwrap(),
        format!("verdict: {headline}"),
        "{table}"
    );
    let out = report(&[run.as_os_str()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = run.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let verdict = html.find("<h2 id=\"verdict\">").expect("a verdict section");
    assert!(
        verdict < html.find("<h2 id=\"throughput\">").unwrap(),
        "the verdict comes first"
    );
    let Some(shown) = rendered(&page) else {
        return serde_json::Value::Null;
    };
    assert_eq!(
        shown["headlines"][0].as_str().unwrap(),
        format!("{other} vs {base}: {headline}"),
        "{shown:#}"
    );

    // The throughput chart: each point at its variant's median, its bar the interval.
    let tput = chart(&shown, throughput_title);
    assert!(
        tput["ylabel"].as_str().unwrap().starts_with("median "),
        "{tput}"
    );
    assert!(
        tput["note"]
            .as_str()
            .unwrap()
            .contains("the median of its repetitions (up to 3)"),
        "{tput}"
    );
    let mut checked = 0;
    for series in tput["series"].as_array().unwrap() {
        let label = series["label"].as_str().unwrap();
        let variant = label.rsplit(" · ").next().unwrap();
        let side = if variant == base { "base" } else { "other" };
        for (mark, bar) in series["marks"]
            .as_array()
            .unwrap()
            .iter()
            .zip(series["bars"].as_array().unwrap())
        {
            let title = mark["title"].as_str().unwrap();
            let threads = title
                .split(" = ")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap();
            let line = c["lines"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| {
                    l["metric"] == "tps"
                        && l["key"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|k| k[0] == "threads" && k[1] == threads)
                })
                .unwrap();
            let s = &line[side];
            let median = s["median"].as_f64().unwrap();
            let (drawn, tol) = value_at(tput, mark["y"].as_f64().unwrap());
            assert!(
                (drawn - median).abs() <= tol,
                "{label} threads={threads}: drawn at {drawn}, median {median} (±{tol})"
            );
            // The bar: the same interval as the table's, where it fits on the axis.
            let (top, _) = value_at(tput, bar[0].as_f64().unwrap());
            let (bottom, _) = value_at(tput, bar[1].as_f64().unwrap());
            let (lo, hi) = (
                s["ci_low"].as_f64().unwrap(),
                s["ci_high"].as_f64().unwrap(),
            );
            assert!(
                (bottom - lo.max(0.0)).abs() <= tol,
                "{label}: bar from {bottom}, interval from {lo}"
            );
            let axis_top = tput["ticks"].as_array().unwrap().last().unwrap()[0]
                .as_f64()
                .unwrap();
            assert!(
                (top - hi.min(axis_top)).abs() <= tol,
                "{label}: bar to {top}, interval to {hi}"
            );
            // And the table: the same median, as `compare` prints it.
            let table = shown["tables"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["title"] == format!("{throughput} (higher is better)"))
                .unwrap();
            let row = table["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| {
                    r[0].as_str()
                        .unwrap()
                        .ends_with(&format!("threads={threads}"))
                })
                .unwrap();
            let cell = if side == "base" { &row[1] } else { &row[2] };
            assert!(
                cell.as_str()
                    .unwrap()
                    .starts_with(&format!("{} [", num(median))),
                "{cell} vs {median}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "2 variants × 2 thread counts: {tput}");

    // The time series: every repetition a series of its own, told apart within its colour
    // (one per thread count) by its dash and its marker.
    let group = format!(" · {base}: ");
    let over_time = shown["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            let t = c["title"].as_str().unwrap();
            t.contains(&group) && t.ends_with(" over time") && !t.contains("latency")
        })
        .unwrap_or_else(|| panic!("no time series of {base}"));
    let series = over_time["series"].as_array().unwrap();
    assert_eq!(
        series.len(),
        6,
        "2 thread counts × 3 repetitions: {over_time}"
    );
    let look = |s: &serde_json::Value| {
        (
            s["marks"][0]["stroke"].as_str().unwrap().to_string(),
            s["dash"].as_str().unwrap_or("none").to_string(),
            s["marks"][0]["shape"].as_str().unwrap().to_string(),
        )
    };
    let looks: std::collections::HashSet<_> = series.iter().map(look).collect();
    assert_eq!(
        looks.len(),
        6,
        "every repetition looks different: {looks:?}"
    );
    for threads in ["1", "2"] {
        let reps: Vec<_> = series
            .iter()
            .filter(|s| {
                s["label"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("threads={threads} · rep "))
            })
            .map(look)
            .collect();
        assert_eq!(reps.len(), 3, "{series:?}");
        assert!(
            reps.iter().all(|r| r.0 == reps[0].0),
            "one colour per thread count: {reps:?}"
        );
        let dashes: std::collections::HashSet<_> = reps.iter().map(|r| &r.1).collect();
        let shapes: std::collections::HashSet<_> = reps.iter().map(|r| &r.2).collect();
        assert_eq!((dashes.len(), shapes.len()), (3, 3), "{reps:?}");
    }
    assert!(
        over_time["legend"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "threads=2 · rep 2"),
        "{over_time}"
    );
    shown
}

/// A suite of two variants at threads 1 and 2, 3 repetitions run back to back, interim lines
/// every second: `target` and `variants` are TOML.
fn study_suite(root: &Path, name: &str, target: &str, defaults: &str, variants: &str) -> PathBuf {
    std::fs::create_dir_all(root).unwrap();
    let suite = root.join(format!("{name}.toml"));
    std::fs::write(
        &suite,
        format!(
            "[suite]\nname = \"{name}\"\nrepeat = 3\nvariant_order = \"interleaved\"\n\n{target}\n\
             [defaults]\n{defaults}report_interval = 1\n\n[matrix]\nthreads = [1, 2]\n\n{variants}"
        ),
    )
    .unwrap();
    let out = sbsuite()
        .arg("run")
        .arg(&suite)
        .args(["--quiet", "--results-dir"])
        .arg(root.join("results"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::run_dir(&root.join("results"), name)
}

/// #29: a report that answers, on a real run without a server (the cpu engine, two variants
/// that differ only by chance): the verdict line, the chart drawn from the tables' median and
/// interval, each repetition its own series, the cost measured (the client's CPU) in the tables.
#[test]
fn issue_29_the_report_of_a_variant_study_answers_in_one_line_and_draws_the_tables_statistic() {
    let tmp = tempfile::tempdir().unwrap();
    let run = study_suite(
        tmp.path(),
        "cpuvar",
        "",
        "workload = \"cpu\"\ntime = 2\n",
        "[[variant]]\nname = \"baseline\"\n\n[[variant]]\nname = \"again\"\n",
    );
    let shown = check_study(&run, "baseline", "again", "Events per second vs threads");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    // The cost per transaction the run recorded, in the results table and as a variant table.
    assert!(
        html.contains("<th>client_cpu_us_per_txn</th>"),
        "results table"
    );
    assert!(html.contains("<h3>client_cpu_us_per_txn (lower is better)</h3>"));
    assert!(
        html.contains("<th>warm-up (s)</th>") && html.contains("<th>steady (trend %/min)</th>")
    );
    assert!(html.contains("<h3>Steady state</h3>"));
    if !shown.is_null() {
        let headline = shown["headlines"][0].as_str().unwrap();
        assert!(
            headline.starts_with("again vs baseline: eps "),
            "{headline}"
        );
        assert!(headline.contains("client_cpu_us_per_txn "), "{headline}");
    }
}

/// #29 on MariaDB: the trial user's durability study (`innodb_flush_log_at_trx_commit` 1 vs
/// 2). Its report now opens with the verdict — the fsyncs per transaction fall by an order of
/// magnitude, said as `better` — with `compare`'s numbers, draws medians beside the tables of
/// medians, and tells the repetitions of one thread count apart.
#[test]
fn issue_29_a_durability_study_on_mariadb_reports_its_verdict_costs_and_repetitions() {
    let _alone = common::server_lock::server_lock();
    let db = "sbsuite_t_report";
    if common::db::admin_my(&[
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ])
    .is_none()
    {
        common::skip("no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)");
        return;
    }
    let setting = "innodb_flush_log_at_trx_commit";
    let restore = common::db::RestoreMy::save(setting);
    let tmp = tempfile::tempdir().unwrap();
    let run = study_suite(
        tmp.path(),
        "durability",
        &format!(
            "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\n\
             database = \"{db}\"\n"
        ),
        "workload = \"oltp_update_index\"\ntable_size = 1000\ntime = 2\n",
        &format!(
            "[[variant]]\nname = \"durable\"\nset_global = {{ {setting} = 1 }}\n\n\
             [[variant]]\nname = \"relaxed\"\nset_global = {{ {setting} = 2 }}\n"
        ),
    );
    assert_eq!(common::db::my_global(setting), restore.original());
    common::db::admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]);
    let shown = check_study(
        &run,
        "durable",
        "relaxed",
        "Transactions per second vs threads",
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    for cost in [
        "server_fsyncs_per_txn",
        "server_log_bytes_per_txn",
        "server_cpu_ms_per_txn",
        "client_cpu_us_per_txn",
    ] {
        assert!(
            html.contains(&format!("<th>{cost}</th>")),
            "{cost} in the results table"
        );
        assert!(
            html.contains(&format!("<h3>{cost} (lower is better)</h3>")),
            "{cost} compared"
        );
    }
    if shown.is_null() {
        return;
    }
    // Relaxed durability syncs the log about once a second instead of at every commit: the
    // verdict says so.
    let fsyncs = shown["headline_classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s[1].as_str().unwrap().starts_with("server_fsyncs_per_txn "))
        .unwrap_or_else(|| panic!("no fsyncs in the verdict: {shown:#}"));
    // Its verdict is `compare`'s (checked above): with 3 pairs, one background flush in a
    // relaxed repetition can leave a point undecided, so the direction is asserted as "not
    // worse", and the size of the fall on the medians.
    assert!(
        matches!(fsyncs[0].as_str().unwrap(), "better" | "unclear"),
        "{fsyncs}"
    );
    let text = fsyncs[1].as_str().unwrap();
    let g: f64 = text
        .split("geomean ")
        .nth(1)
        .and_then(|t| t.split('%').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(g <= -80.0, "{text}");
}

/// #29: a run step whose throughput drifted is flagged wherever its numbers are shown — under
/// the verdict, in its results row and in the steady-state table of its variant — with the
/// sentence that says how much; its warm-up and its cost per transaction are tabled. One
/// matrix point: the verdict gives each metric's change with its interval.
#[test]
fn issue_29_an_unsteady_step_is_flagged_beside_its_numbers_and_one_point_gets_intervals() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    // (variant, tps, p99, fsyncs per transaction, steady, trend %/min)
    let data = [
        ("baseline", 1000, 9.0, 1.02, "yes", "0.4"),
        ("relaxed", 1430, 6.3, 0.031, "yes", "-1.2"),
        ("baseline", 1010, 9.2, 1.01, "yes", "0.1"),
        ("relaxed", 1445, 6.4, 0.029, "no", "-30"),
        ("baseline", 990, 8.9, 1.03, "yes", "-0.3"),
        ("relaxed", 1420, 6.2, 0.030, "yes", "0.8"),
    ];
    let owned: Vec<Vec<(&str, String)>> = data
        .iter()
        .enumerate()
        .map(|(i, (variant, tps, p99, fsyncs, steady, trend))| {
            vec![
                ("run_id", "r1".into()),
                ("step", (i + 1).to_string()),
                ("name", "upd-t8".into()),
                ("variant", variant.to_string()),
                ("workload", "oltp_update_index".into()),
                ("threads", "8".into()),
                ("repetition", (i / 2 + 1).to_string()),
                ("seconds", "60".into()),
                ("eps", tps.to_string()),
                ("tps", tps.to_string()),
                ("lat_p95", format!("{}", p99 * 0.8)),
                ("lat_p99", p99.to_string()),
                ("server_fsyncs_per_txn", fsyncs.to_string()),
                ("warmup_s", "10".into()),
                ("steady", steady.to_string()),
                ("trend_pct_per_min", trend.to_string()),
                ("status", "ok".into()),
            ]
        })
        .collect();
    let rows: Vec<Vec<(&str, &str)>> = owned
        .iter()
        .map(|r| r.iter().map(|(c, v)| (*c, v.as_str())).collect())
        .collect();
    let refs: Vec<&[(&str, &str)]> = rows.iter().map(Vec::as_slice).collect();
    handmade_run(&dir, &refs);
    std::fs::write(
        dir.join("suite.toml"),
        "[suite]\nname = \"d\"\nrepeat = 3\nvariant_order = \"interleaved\"\n",
    )
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&compare_by_variant(&dir, "json")).unwrap();
    let headline = expected_headline(&json["comparisons"][0], "tps");
    assert!(
        headline.starts_with("tps +43.0% [") && headline.contains(" better, p95 "),
        "{headline}"
    );
    assert!(
        headline.contains("server_fsyncs_per_txn -97.1% ["),
        "{headline}"
    );
    let out = report(&[dir.as_os_str()]);
    assert!(out.status.success());
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let sentence = "throughput fell 30.0 % over its 60 s window (-30.0 %/min, not steady)";
    // Under the verdict, with `compare`'s sentence.
    let verdict = &html
        [html.find("<h2 id=\"verdict\">").unwrap()..html.find("<h2 id=\"throughput\">").unwrap()];
    assert!(
        verdict.contains(&format!(
            "<p class=\"warn\">⚠ not steady: variant=relaxed step 4 (upd-t8): {sentence}</p>"
        )),
        "{verdict}"
    );
    // Its results row.
    let row = html
        .split("<tr class=\"ok unsteady\">")
        .nth(1)
        .expect("the unsteady row is marked");
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.starts_with("<td>4</td>"), "{row}");
    assert!(
        row.contains(&format!("<td class=\"warn\">⚠ no: {sentence}</td>")),
        "{row}"
    );
    assert_eq!(html.matches("<tr class=\"ok unsteady\">").count(), 1);
    assert!(
        html.contains("<th>server_fsyncs_per_txn</th>")
            && html.contains("<td class=\"n\">0.0290</td>")
    );
    assert!(html.contains("<th>warm-up (s)</th>") && html.contains("<td class=\"n\">10</td>"));
    // The variant tables: the relaxed cell holds the step that drifted, and the steady state.
    let section = &html
        [html.find("<h2 id=\"variants\">").unwrap()..html.find("<h2 id=\"time-series\">").unwrap()];
    assert!(
        section.contains("<h3>server_fsyncs_per_txn (lower is better)</h3>"),
        "{section}"
    );
    assert!(
        section.contains(&format!(
            "<span class=\"warn\" title=\"step 4: {sentence}\">⚠ not steady</span>"
        )),
        "{section}"
    );
    let steady = &section[section
        .find("<h3>Steady state</h3>")
        .expect("a steady-state table")..];
    assert!(
        steady.contains(&format!(
            "<td>steady 3 of 3, warm-up 10 s, trend -0.3 to +0.4 %/min</td><td class=\"warn\">⚠ not steady 1 of 3: {sentence}, steady 2 of 3, warm-up 10 s, trend -30.0 to +0.8 %/min</td>"
        )),
        "{steady}"
    );
    let Some(shown) = rendered(&dir.join("report.html")) else {
        return;
    };
    assert_eq!(
        shown["headlines"][0].as_str().unwrap(),
        format!("relaxed vs baseline: {headline}")
    );
    let warnings = shown["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains(sentence)),
        "{warnings:?}"
    );
}

/// #30: the directory of a capacity search (its curve and a run per probe, no results.csv)
/// gets the search's page: the answer, the hockey stick with the target and the rate found,
/// the rate achieved against the rate offered, and every probe; Chromium draws each point
/// where the numbers put it. Another directory beside it, or a curve that does not read, is
/// refused.
#[test]
fn issue_30_a_capacity_search_is_drawn_as_a_hockey_stick_with_its_capacity_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nap").join("20260101-000000");
    std::fs::create_dir_all(&dir).unwrap();
    // The search of the README: the closed loop, halving, bisection, a confirmation.
    let rows = [
        ("closed_loop", "", "91.3", "11.35", ""),
        ("bracket", "91", "85.6", "247.2", "no"),
        ("bracket", "46", "51.4", "45.42", "yes"),
        ("bisect", "65", "62.2", "56.89", "yes"),
        ("bisect", "77", "81.5", "167.51", "yes"),
        ("confirm", "77", "74.0", "77.4", "yes"),
        ("confirm", "77", "70.0", "163.84", "yes"),
    ];
    let mut csv = String::from(
        "phase,offered_rate,achieved_rate,lat_avg,lat_p95,lat_p99,lat_max,dropped,pass,run_dir,seconds,target\n",
    );
    for (i, (phase, offered, achieved, p99, pass)) in rows.iter().enumerate() {
        csv.push_str(&format!(
            "{phase},{offered},{achieved},,,{p99},,0,{pass},{}/probe-{i},4.0,p99<200ms\n",
            dir.display()
        ));
    }
    std::fs::write(dir.join("capacity.csv"), &csv).unwrap();
    std::fs::write(
        dir.join("suite.toml"),
        "[suite]\nname = \"nap\"\n\n[capacity]\ntarget = \"p99<200ms\"\n",
    )
    .unwrap();
    let svg_dir = tmp.path().join("svg");
    let out = report(&[dir.as_os_str(), "--svg".as_ref(), svg_dir.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("wrote 2 SVG charts"), "{stdout}");
    for f in ["capacity.svg", "capacity-rate.svg"] {
        let text = std::fs::read_to_string(svg_dir.join(f)).unwrap();
        roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let text = strip_tags(&html);
    for expected in [
        "sbsuite report: nap/20260101-000000 (capacity search)",
        "capacity at p99 ≤ 200 ms: 77/s (fails at 91/s)",
        "confirmed: 2 of 2 repetitions passed at 77/s: p99 median 120.62 ms",
        "target = \"p99<200ms\"",
    ] {
        assert!(text.contains(expected), "{expected:?} not in {text}");
    }
    assert_eq!(html.matches("<td>confirm</td>").count(), 2);
    assert_eq!(html.matches("<tr class=\"failed\">").count(), 1);

    let Some(page) = rendered(&page) else {
        return;
    };
    let latency = chart(&page, "p99 latency vs offered load");
    let labels: Vec<&str> = latency["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "p99 at each rate offered",
            "target: p99 ≤ 200 ms",
            "capacity 77/s (2 of 2 confirmed)"
        ]
    );
    let marks = |s: usize| -> Vec<f64> {
        latency["series"][s]["marks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| value_at(latency, m["y"].as_f64().unwrap()).0)
            .collect()
    };
    // The stick: a point per rate at the median of its runs (77/s: the bisection probe and
    // the two confirmations), drawn where the axis says.
    let expected = [45.42, 56.89, 163.84, 247.2];
    assert_eq!(marks(0).len(), expected.len(), "{latency}");
    for (got, want) in marks(0).iter().zip(expected) {
        assert!((got - want).abs() < 2.0, "{got} for {want}: {latency}");
    }
    // The target at 200 ms, and the rate found as a line from the axis up to it.
    assert!(marks(1).iter().all(|v| (v - 200.0).abs() < 2.0));
    let found = marks(2);
    assert!(
        found[0].abs() < 2.0 && (found[1] - 200.0).abs() < 2.0,
        "{found:?}"
    );
    let rate = chart(&page, "Achieved vs offered rate");
    assert_eq!(
        rate["series"][2]["label"],
        "closed loop (the bound): 91.3/s"
    );

    // A capacity search is reported alone; a curve that does not read is bad input.
    let run = real_run(&tmp.path().join("results"));
    let out = report(&[run.as_os_str(), dir.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a capacity search"));
    std::fs::write(dir.join("capacity.csv"), "phase\nbisect\n").unwrap();
    let out = report(&[dir.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("capacity.csv: no `offered_rate` column"),
        "{err}"
    );
}
