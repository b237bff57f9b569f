//! The dashboard's stylesheet and script, compiled into the binary.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The stylesheet.
pub(super) const CSS: &str = include_str!("assets/app.css");
/// The script: refreshes `#live` in place, shows event details.
pub(super) const JS: &str = include_str!("assets/app.js");
/// The icon (an anchor), also answered for `/favicon.ico`.
const ICON: &str = include_str!("assets/icon.svg");

/// `GET /favicon.ico`.
pub(super) async fn favicon() -> Response {
    serve(ICON, "image/svg+xml")
}

/// `GET /ui/assets/{name}`.
pub(super) async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "app.css" => (CSS, "text/css; charset=utf-8"),
        "app.js" => (JS, "text/javascript; charset=utf-8"),
        "icon.svg" => (ICON, "image/svg+xml"),
        _ => {
            return (
                StatusCode::NOT_FOUND,
                format!(
                    "no dashboard asset {:?}",
                    name.chars().take(80).collect::<String>()
                ),
            )
                .into_response();
        }
    };
    serve(body, kind)
}

fn serve(body: &'static str, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            // Assets change with the binary only: a restart may bring new
            // ones, so browsers revalidate after a minute.
            (header::CACHE_CONTROL, "public, max-age=60"),
        ],
        body,
    )
        .into_response()
}
