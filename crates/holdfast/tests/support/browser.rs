//! Headless Chromium (Debian's `chromium` package; `scripts/test` installs
//! it when missing) driven over the DevTools protocol, for the dashboard's
//! browser tests: pages opened, elements awaited, script evaluated, clicks,
//! screenshots written for a reviewer, and every console error or uncaught
//! exception collected. A test that needs the browser fails loudly when
//! there is none — it never skips.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use headless_chrome::browser::tab::Tab;
use headless_chrome::protocol::cdp::Log::LogEntryLevel;
use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::protocol::cdp::Runtime::ConsoleAPICalledEventTypeOption;
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::{Browser, LaunchOptions};
use serde_json::Value;

use crate::support::PATIENCE;

/// Where Chromium is looked for (`HOLDFAST_CHROMIUM` overrides).
const CHROMIUM: [&str; 2] = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

/// A browser with one tab whose console errors are collected.
pub struct Page {
    // Kept alive: dropping it ends the browser process.
    _browser: Browser,
    pub tab: Arc<Tab>,
    errors: Arc<Mutex<Vec<String>>>,
    screenshots: PathBuf,
}

impl Page {
    /// Starts headless Chromium (1400×1000) with one tab; screenshots go
    /// into `target/dashboard-screenshots/<test>/`.
    pub fn open(test: &str) -> Result<Page> {
        Page::open_with(test, &[])
    }

    /// [`open`](Self::open) with extra Chromium flags (e.g. the server key
    /// to trust with `--ignore-certificate-errors-spki-list`).
    pub fn open_with(test: &str, args: &[&str]) -> Result<Page> {
        let path = std::env::var_os("HOLDFAST_CHROMIUM")
            .map(PathBuf::from)
            .or_else(|| CHROMIUM.iter().map(PathBuf::from).find(|p| p.exists()))
            .context(
                "no Chromium: the dashboard's browser tests need Debian's `chromium` package \
                 (scripts/test installs it; or set HOLDFAST_CHROMIUM)",
            )?;
        let options = LaunchOptions::default_builder()
            .path(Some(path))
            .sandbox(false)
            .window_size(Some((1400, 1000)))
            .args(args.iter().map(std::ffi::OsStr::new).collect())
            .idle_browser_timeout(Duration::from_secs(600))
            .build()
            .map_err(|e| anyhow::anyhow!("Chromium launch options: {e}"))?;
        let browser = Browser::new(options).context("starting headless Chromium")?;
        let tab = browser.new_tab().context("opening a tab")?;
        tab.set_default_timeout(PATIENCE);
        tab.enable_log()?.enable_runtime()?;
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = Arc::clone(&errors);
        tab.add_event_listener(Arc::new(move |event: &Event| {
            let error = match event {
                Event::LogEntryAdded(e) if matches!(e.params.entry.level, LogEntryLevel::Error) => {
                    Some(format!(
                        "console: {} ({})",
                        e.params.entry.text,
                        e.params.entry.url.clone().unwrap_or_default()
                    ))
                }
                Event::RuntimeExceptionThrown(e) => Some(format!(
                    "uncaught exception: {} at line {}",
                    e.params.exception_details.text, e.params.exception_details.line_number
                )),
                Event::RuntimeConsoleAPICalled(e)
                    if matches!(e.params.Type, ConsoleAPICalledEventTypeOption::Error) =>
                {
                    Some(format!(
                        "console.error: {:?}",
                        e.params.args.first().and_then(|a| a.value.clone())
                    ))
                }
                _ => None,
            };
            if let Some(error) = error {
                errors_push(&sink, error);
            }
        }))?;
        let screenshots = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/dashboard-screenshots")
            .join(test);
        std::fs::create_dir_all(&screenshots)?;
        Ok(Page {
            _browser: browser,
            tab,
            errors,
            screenshots,
        })
    }

    /// Opens `url` and waits until it loaded.
    pub fn go(&self, url: &str) -> Result<()> {
        self.tab
            .navigate_to(url)
            .and_then(|t| t.wait_until_navigated())
            .with_context(|| format!("opening {url}"))?;
        Ok(())
    }

    /// The value of `expression` evaluated in the page (as JSON, so that
    /// arrays and objects come back whole).
    pub fn eval(&self, expression: &str) -> Result<Value> {
        let object = self
            .tab
            .evaluate(&format!("JSON.stringify(({expression}))"), false)
            .with_context(|| format!("evaluating {expression}"))?;
        match object.value {
            Some(Value::String(json)) => Ok(serde_json::from_str(&json)?),
            _ => Ok(Value::Null),
        }
    }

    /// Waits (up to [`PATIENCE`]) until `expression` is true in the page,
    /// checking every 100 ms — each check an event of the page's own
    /// refreshes, not a fixed sleep.
    pub fn until(&self, what: &str, expression: &str) -> Result<()> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if self.eval(expression)? == Value::Bool(true) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let text =
                    self.eval("document.body ? document.body.innerText.slice(0, 3000) : ''")?;
                bail!("the page never showed {what} ({expression}); it shows:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The page's visible text.
    pub fn text(&self) -> Result<String> {
        Ok(self
            .eval("document.body.innerText")?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// Clicks the middle of the first element matching `selector` with
    /// the mouse (scrolled into view first; works for SVG shapes too).
    pub fn click(&self, selector: &str) -> Result<()> {
        let at = self.eval(&format!(
            "(() => {{ const e = document.querySelector({selector:?}); if (!e) return null; \
             e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
             return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        ))?;
        let (Some(x), Some(y)) = (at[0].as_f64(), at[1].as_f64()) else {
            bail!("nothing to click: no {selector} on the page");
        };
        self.tab
            .click_point(headless_chrome::browser::tab::point::Point { x, y })
            .with_context(|| format!("clicking {selector} at ({x}, {y})"))?;
        Ok(())
    }

    /// Writes a full-page screenshot `name`.png; returns its path.
    pub fn screenshot(&self, name: &str) -> Result<PathBuf> {
        let png = self
            .tab
            .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
            .context("taking a screenshot")?;
        let path = self.screenshots.join(format!("{name}.png"));
        std::fs::write(&path, png)?;
        eprintln!("screenshot: {}", path.display());
        Ok(path)
    }

    /// Fails if any console error or uncaught exception happened so far.
    pub fn no_console_errors(&self) -> Result<()> {
        let errors = self.errors.lock().map(|e| e.clone()).unwrap_or_default();
        if !errors.is_empty() {
            bail!("the pages logged errors:\n{}", errors.join("\n"));
        }
        Ok(())
    }
}

fn errors_push(sink: &Mutex<Vec<String>>, error: String) {
    if let Ok(mut errors) = sink.lock() {
        errors.push(error);
    }
}
