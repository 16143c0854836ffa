//! The Image and File API benchmark's client (`bench/images`).
//!
//!   images picture --out FILE [--width W] [--height H]
//!       writes the benchmark's photo-like JPEG (deterministic).
//!   images inprocess --file FILE [--iterations N]
//!       times svc's transformation in this process, cold (decode, crop, resize, encode each
//!       time), for the two operations of the benchmark; one JSON line per operation.
//!   images load --base URL --clients C --seconds S --paths TEMPLATE [--from N] [--to N]
//!       GETs `TEMPLATE` with `{n}` replaced by N, N+1, … (each path once: cold; a template
//!       without `{n}`: the same path every time), C connections at a time, for S seconds;
//!       prints requests/s and the size of the first image as one JSON line.
//!   images upload --base URL --service ID --megabytes M
//!       uploads one file of M MiB, streamed, and prints MB/s.
//!   images size --file FILE
//!       prints an image's width and height.
//!
//! The two operations: `/{n}x200` (fit inside, so any n ≥ 267 gives 267×200 from 2000×1500)
//! and `/0x0:400x400/{n}x250` (crop, then fit: 250×250 for any n ≥ 250).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use svc_bench::http1::{Conn, Endpoint};
use svc_runtime::files::images::{ops, transform};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Args {
    command: String,
    values: std::collections::HashMap<String, String>,
}

impl Args {
    fn get(&self, name: &str) -> Result<&str, String> {
        self.values
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| format!("{} needs --{name}", self.command))
    }

    fn number(&self, name: &str, default: usize) -> Result<usize, String> {
        match self.values.get(name) {
            Some(v) => v.parse().map_err(|e| format!("--{name}: {e}")),
            None => Ok(default),
        }
    }
}

fn args() -> Result<Args, String> {
    let mut argv = std::env::args().skip(1);
    let command = argv
        .next()
        .ok_or("usage: images picture|inprocess|load|upload|size …")?;
    let mut values = std::collections::HashMap::new();
    while let Some(flag) = argv.next() {
        let name = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected {flag}"))?;
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        values.insert(name.to_owned(), value);
    }
    Ok(Args { command, values })
}

fn main() {
    let result = args().and_then(|args| match args.command.as_str() {
        "picture" => picture(&args),
        "inprocess" => inprocess(&args),
        "size" => size(&args),
        "load" | "upload" => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                rt.block_on(async {
                    if args.command == "load" {
                        load(&args).await
                    } else {
                        upload(&args).await
                    }
                })
            }),
        other => Err(format!("unknown command {other}")),
    });
    if let Err(e) = result {
        eprintln!("images: {e}");
        std::process::exit(1);
    }
}

/// A photo-like picture: smooth light and colour over the frame, with fine detail on top (so
/// that neither the decoder nor the encoder meets a trivial image).
fn picture(args: &Args) -> Result<(), String> {
    let width = args.number("width", 2000)? as u32;
    let height = args.number("height", 1500)? as u32;
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let noise = (seed % 24) as f32 - 12.0;
        let (fx, fy) = (x as f32 / width as f32, y as f32 / height as f32);
        let wave = ((fx * 23.0).sin() * (fy * 17.0).cos()) * 40.0;
        let channel = |base: f32| (base + wave + noise).clamp(0.0, 255.0) as u8;
        image::Rgb([
            channel(60.0 + 150.0 * fx),
            channel(90.0 + 120.0 * fy),
            channel(170.0 - 100.0 * fx * fy),
        ])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut out, 90,
        ))
        .map_err(|e| e.to_string())?;
    std::fs::write(args.get("out")?, out).map_err(|e| e.to_string())
}

fn size(args: &Args) -> Result<(), String> {
    let bytes = std::fs::read(args.get("file")?).map_err(|e| e.to_string())?;
    let image = image::load_from_memory(&bytes).map_err(|e| e.to_string())?;
    println!("{}x{}", image.width(), image.height());
    Ok(())
}

/// The benchmark's operations, as path segments.
const OPERATIONS: [(&str, &[&str]); 2] = [
    ("fit 300x200", &["300x200"]),
    ("crop 0x0:400x400, fit 250x250", &["0x0:400x400", "250x250"]),
];

fn inprocess(args: &Args) -> Result<(), String> {
    let source = std::fs::read(args.get("file")?).map_err(|e| e.to_string())?;
    let iterations = args.number("iterations", 50)?;
    for (name, segments) in OPERATIONS {
        let ops = ops::parse(segments)?;
        // One untimed run: the code and the allocator's first pages.
        let first = transform::apply(&source, &ops).map_err(|e| e.0)?;
        let out = image::load_from_memory(&first).map_err(|e| e.to_string())?;
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let started = Instant::now();
            let done = transform::apply(&source, &ops).map_err(|e| e.0)?;
            times.push(started.elapsed());
            std::hint::black_box(done);
        }
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "{}",
            json!({
                "operation": name,
                "ms": median.as_secs_f64() * 1000.0,
                "width": out.width(),
                "height": out.height(),
            })
        );
    }
    Ok(())
}

async fn load(args: &Args) -> Result<(), String> {
    let endpoint = Arc::new(Endpoint::server(args.get("base")?)?);
    let clients = args.number("clients", 4)?;
    let seconds = args.number("seconds", 10)?;
    let template = args.get("paths")?.to_owned();
    let from = args.number("from", 300)?;
    let to = args.number("to", 10_000)?;
    let next = Arc::new(AtomicUsize::new(from));
    let done = Arc::new(AtomicU64::new(0));
    let first = Arc::new(std::sync::Mutex::new(None::<bytes::Bytes>));
    let deadline = Instant::now() + Duration::from_secs(seconds as u64);
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (endpoint, next, done, first) =
            (endpoint.clone(), next.clone(), done.clone(), first.clone());
        let template = template.clone();
        let distinct = template.contains("{n}");
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::new(&endpoint);
            while Instant::now() < deadline {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if distinct && n > to {
                    return Err(format!(
                        "ran out of distinct paths ({from}..={to}) before the end"
                    ));
                }
                let path = template.replace("{n}", &n.to_string());
                let res = conn.get(&path, "x-cache").await?;
                if res.status != 200 {
                    return Err(format!(
                        "{path}: HTTP {}: {}",
                        res.status,
                        String::from_utf8_lossy(&res.body)
                    ));
                }
                first
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert(res.body);
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), String>(())
        }));
    }
    let started = Instant::now();
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let requests = done.load(Ordering::Relaxed);
    let first = first.lock().unwrap_or_else(|e| e.into_inner()).take();
    let size = first
        .and_then(|b| image::load_from_memory(&b).ok())
        .map(|i| format!("{}x{}", i.width(), i.height()));
    println!(
        "{}",
        json!({ "requests": requests, "seconds": elapsed, "rate": requests as f64 / elapsed, "size": size })
    );
    Ok(())
}

async fn upload(args: &Args) -> Result<(), String> {
    let base = args.get("base")?;
    let service = args.get("service")?;
    let len = args.number("megabytes", 100)? * 1024 * 1024;
    let authority = base.strip_prefix("http://").ok_or("--base: not http://")?;
    let boundary = "svc-bench-boundary-8a1f";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"data\"; filename=\"big.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let started = Instant::now();
    let mut stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|e| e.to_string())?;
    let request = format!(
        "POST /file/v1/{service} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
        head.len() + len + tail.len()
    );
    let piece: Vec<u8> = (0..256 * 1024).map(|i| (i % 251) as u8).collect();
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut sent = 0;
    while sent < len {
        let n = piece.len().min(len - sent);
        stream
            .write_all(&piece[..n])
            .await
            .map_err(|e| e.to_string())?;
        sent += n;
    }
    stream
        .write_all(tail.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .await
        .map_err(|e| e.to_string())?;
    let elapsed = started.elapsed().as_secs_f64();
    if !answer.starts_with("HTTP/1.1 200") {
        return Err(format!("the upload failed: {answer}"));
    }
    println!(
        "{}",
        json!({ "megabytes": len / (1024 * 1024), "seconds": elapsed, "rate": len as f64 / (1024.0 * 1024.0) / elapsed })
    );
    Ok(())
}
