//! Progress of an export or import on stderr: when stderr is a terminal, three indicatif bars
//! (files, elements, bytes) with their rates and, when the totals are known (import), the time
//! left; otherwise one plain line per file (`nodes/000003.json: 1200 elements, 98.1 KB, 0.4 s`),
//! without carriage returns or escape sequences, so logs and pipes stay readable.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::{count, human_bytes};

/// What the whole run will move, when known in advance.
#[derive(Debug, Clone, Copy)]
pub(super) struct Totals {
    pub(super) files: u64,
    pub(super) elements: u64,
    pub(super) bytes: u64,
}

pub(super) struct Progress {
    bars: Option<Bars>,
}

struct Bars {
    multi: MultiProgress,
    files: ProgressBar,
    elements: ProgressBar,
    bytes: ProgressBar,
}

impl Progress {
    /// Bars when stderr is a terminal, plain lines otherwise.
    pub(super) fn new(totals: Option<Totals>) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bars: None };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let bar = |len: Option<u64>, template: &str| {
            let bar = match len {
                Some(len) => ProgressBar::new(len),
                None => ProgressBar::new_spinner(),
            };
            let style = ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key(
                    "rate",
                    |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.0}/s", state.per_sec());
                    },
                )
                .progress_chars("=> ");
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            multi.add(bar)
        };
        let bars = match totals {
            Some(t) => Bars {
                files: bar(
                    Some(t.files),
                    "files     [{bar:30}] {pos}/{len} {msg} ({elapsed}, ETA {eta})",
                ),
                elements: bar(
                    Some(t.elements),
                    "elements  [{bar:30}] {human_pos}/{human_len} ({rate})",
                ),
                bytes: bar(
                    Some(t.bytes),
                    "bytes     [{bar:30}] {decimal_bytes}/{decimal_total_bytes} ({decimal_bytes_per_sec}, ETA {eta})",
                ),
                multi,
            },
            None => Bars {
                files: bar(None, "{spinner} files     {pos} {msg} ({elapsed})"),
                elements: bar(None, "{spinner} elements  {human_pos} ({rate})"),
                bytes: bar(
                    None,
                    "{spinner} bytes     {decimal_bytes} ({decimal_bytes_per_sec})",
                ),
                multi,
            },
        };
        Progress { bars: Some(bars) }
    }

    /// The file now being moved (shown beside the files bar).
    pub(super) fn start_file(&self, name: &str) {
        if let Some(bars) = &self.bars {
            bars.files.set_message(name.to_owned());
        }
    }

    /// One file moved: its elements and bytes.
    pub(super) fn file_done(&self, name: &str, elements: u64, bytes: u64, took: Duration) {
        match &self.bars {
            Some(bars) => {
                bars.files.inc(1);
                bars.elements.inc(elements);
                bars.bytes.inc(bytes);
            }
            None => eprintln!(
                "{name}: {}, {}, {:.1} s",
                count(elements, "element", "elements"),
                human_bytes(bytes),
                took.as_secs_f64()
            ),
        }
    }

    /// A line of text above the bars (or on its own).
    pub(super) fn println(&self, text: &str) {
        match &self.bars {
            Some(bars) => {
                let _ = bars.multi.println(text);
            }
            None => eprintln!("{text}"),
        }
    }

    /// Removes the bars (the summary is printed after).
    pub(super) fn finish(&self) {
        if let Some(bars) = &self.bars {
            for bar in [&bars.files, &bars.elements, &bars.bytes] {
                bar.finish_and_clear();
            }
            let _ = bars.multi.clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
