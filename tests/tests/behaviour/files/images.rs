//! The Image API (seed §4.7, reference §9.2): every operation and their combinations against
//! known output sizes, EXIF orientation, the error texts and limits, decompression bombs, GIF and
//! SVG served as stored, variants computed once however many ask at the same time, and
//! variants removed with their file.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat};
use serde_json::Value;

use super::{stored, upload};
use crate::support::{SERVICE_ID, Server};

/// An image of `width` × `height` in `format`, with a gradient (so that it is no trivial
/// picture for the encoders).
pub fn picture(width: u32, height: u32, format: ImageFormat) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            (x * 255 / width.max(1)) as u8,
            (y * 255 / height.max(1)) as u8,
            90,
        ])
    });
    let mut out = Vec::new();
    DynamicImage::ImageRgb8(image)
        .write_to(&mut Cursor::new(&mut out), format)
        .expect("an encodable picture");
    out
}

/// A JPEG whose EXIF says to turn it a quarter to the right (orientation 6) before showing it.
fn turned_jpeg(width: u32, height: u32) -> Vec<u8> {
    let plain = picture(width, height, ImageFormat::Jpeg);
    // APP1: "Exif\0\0", a big-endian TIFF header, one IFD with one entry: 0x0112 (Orientation),
    // SHORT, count 1, value 6.
    let mut exif = b"Exif\0\0MM\0\x2a\0\0\0\x08".to_vec();
    exif.extend_from_slice(&[
        0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0, 0,
    ]);
    let len = u16::try_from(exif.len() + 2).unwrap();
    let mut out = plain[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&exif);
    out.extend_from_slice(&plain[2..]);
    out
}

/// GETs an image address under the file with `secret`.
async fn get(srv: &Server, secret: &str, ops: &str) -> reqwest::Response {
    srv.anonymous()
        .get(srv.url(&format!("/images/v1/{SERVICE_ID}/{secret}{ops}")))
        .send()
        .await
        .expect("the image request")
}

/// The size of the image an address answers, checking its status and type.
async fn size_of(srv: &Server, secret: &str, ops: &str, content_type: &str) -> (u32, u32) {
    let res = get(srv, secret, ops).await;
    assert_eq!(res.status(), 200, "{ops}: {:?}", res.text().await);
    assert_eq!(res.headers()["Content-Type"], content_type, "{ops}");
    assert_eq!(res.headers()["Cache-Control"], "max-age=31536000", "{ops}");
    let image = image::load_from_memory(&res.bytes().await.unwrap()).expect("an image");
    (image.width(), image.height())
}

/// The text of a refused address (HTTP 400).
async fn refused(srv: &Server, secret: &str, ops: &str) -> String {
    let res = get(srv, secret, ops).await;
    assert_eq!(res.status(), 400, "{ops}");
    res.text().await.unwrap()
}

fn secret_of(uploaded: &Value) -> String {
    uploaded["secret"].as_str().unwrap().to_owned()
}

store_tests! {
    /// Each operation and combination, against the sizes it must give.
    async fn image_operations_give_known_sizes(srv) {
        let png = secret_of(&upload(srv, "photo.png", &picture(400, 300, ImageFormat::Png)).await);
        for (ops, size) in [
            ("/200x200", (200, 150)),
            ("/200x200!", (200, 200)),
            ("/100x", (100, 75)),
            ("/x150", (200, 150)),
            ("/800x", (800, 600)),
            ("/0x0:100x100", (100, 100)),
            ("/0x0:100x100/50x50", (50, 50)),
            ("/50x50/0x0:100x100", (50, 50)),
            ("/10x20:1000x30", (390, 30)),
            ("/x:100x50/20x", (20, 10)),
            ("/200x200/photo.png", (200, 150)),
            ("/200x200/0x0:100x100/photo.png", (200, 200)),
            ("/200x200/", (200, 150)),
        ] {
            assert_eq!(size_of(srv, &png, ops, "image/png").await, size, "{ops}");
        }
        let jpeg = secret_of(&upload(srv, "photo.jpg", &picture(2000, 1500, ImageFormat::Jpeg)).await);
        assert_eq!(size_of(srv, &jpeg, "/300x200", "image/jpeg").await, (267, 200));
        assert_eq!(size_of(srv, &jpeg, "/0x0:400x400/250x250", "image/jpeg").await, (250, 250));
        let bmp = secret_of(&upload(srv, "a.bmp", &picture(60, 40, ImageFormat::Bmp)).await);
        assert_eq!(size_of(srv, &bmp, "/30x30", "image/bmp").await, (30, 20));
        let webp = secret_of(&upload(srv, "a.webp", &picture(60, 40, ImageFormat::WebP)).await);
        assert_eq!(size_of(srv, &webp, "/x20", "image/webp").await, (30, 20));
        // Without an operation, or with a name only: the bytes as stored.
        let original = stored(srv, &png).await.expect("the stored picture");
        for ops in ["", "/", "/photo.png"] {
            let res = get(srv, &png, ops).await;
            assert_eq!(res.status(), 200, "{ops}");
            assert_eq!(res.bytes().await.unwrap().as_ref(), original.as_slice(), "{ops}");
        }
    }

    /// A JPEG is turned upright by its EXIF orientation before it is cropped or resized.
    async fn exif_orientation_is_applied(srv) {
        let turned = secret_of(&upload(srv, "turned.jpg", &turned_jpeg(200, 100)).await);
        assert_eq!(size_of(srv, &turned, "/50x", "image/jpeg").await, (50, 100));
        assert_eq!(size_of(srv, &turned, "/0x0:100x150", "image/jpeg").await, (100, 150));
    }

    /// The reference's texts, and the limits.
    async fn image_errors_and_limits(srv) {
        let png = secret_of(&upload(srv, "photo.png", &picture(40, 30, ImageFormat::Png)).await);
        for (ops, text) in [
            ("/0x100", "Width or height must be positive".to_owned()),
            ("/x", "At least width or height must be provided".to_owned()),
            ("/10001x1", "Limit exceeded. Width (10001) or height (1) must not be bigger than 10000".to_owned()),
            ("/-5x5", "Error: Invalid resize, crop pattern or name of image: -5x5".to_owned()),
            ("/5x5/5x5/5x5!", "Error: Invalid name of image: 5x5!".to_owned()),
            ("/40x0:5x5", "Error: The crop area 40x0:5x5 lies outside the image (40x30)".to_owned()),
        ] {
            assert_eq!(refused(srv, &png, ops).await, text, "{ops}");
        }
        let text = secret_of(&upload(srv, "notes.txt", b"not a picture").await);
        assert_eq!(refused(srv, &text, "/10x10").await, "File not an image");
        // An image type by name, but not an image inside.
        let fake = secret_of(&upload(srv, "fake.png", b"not a picture either").await);
        assert_eq!(refused(srv, &fake, "/10x10").await, "File not an image");
        // A small file whose header claims 60000 x 60000 pixels is refused before decoding.
        let mut bomb = picture(1, 1, ImageFormat::Png);
        bomb[16..20].copy_from_slice(&60_000u32.to_be_bytes());
        bomb[20..24].copy_from_slice(&60_000u32.to_be_bytes());
        let crc = crc32(&bomb[12..29]);
        bomb[29..33].copy_from_slice(&crc.to_be_bytes());
        let bomb = secret_of(&upload(srv, "bomb.png", &bomb).await);
        let text = refused(srv, &bomb, "/10x10").await;
        assert_eq!(text, "Error: The image is too large: 60000x60000 pixels, at most 10000 on a side");
        // A result over 6 MiB: noise does not compress.
        let mut seed = 0x9e37_79b9_u32;
        let noise = image::RgbImage::from_fn(1500, 1500, |_, _| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let [a, b, c, _] = seed.to_le_bytes();
            image::Rgb([a, b, c])
        });
        let mut noisy = Vec::new();
        DynamicImage::ImageRgb8(noise)
            .write_to(&mut Cursor::new(&mut noisy), ImageFormat::Png)
            .unwrap();
        let noisy = secret_of(&upload(srv, "noise.png", &noisy).await);
        let text = refused(srv, &noisy, "/1500x1500!").await;
        assert!(
            text.starts_with("Error: The resulting image is ")
                && text.ends_with(" bytes, more than the 6291456 bytes an image may have"),
            "{text}"
        );
        // Over 25 MB.
        let big = secret_of(&upload(srv, "big.png", &vec![0u8; 25 * 1024 * 1024 + 1]).await);
        assert_eq!(refused(srv, &big, "/10x10").await, "File too big");
        let res = get(srv, "cnosuchsecret0000000000000", "/10x10").await;
        assert_eq!(res.status(), 404);
        // The paths of the original without `/v1` move there.
        let res = srv
            .anonymous()
            .get(srv.url(&format!("/images/{SERVICE_ID}/{png}/10x10")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "the redirect is followed");
        assert_eq!(res.url().path(), format!("/images/v1/{SERVICE_ID}/{png}/10x10"));
    }

    /// GIF and SVG are served as stored, whatever the operations.
    async fn gif_and_svg_are_served_as_stored(srv) {
        let svg = b"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"/>";
        let secret = secret_of(&upload(srv, "logo.svg", svg).await);
        let res = get(srv, &secret, "/5x5").await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["Content-Type"], "image/svg+xml");
        assert_eq!(res.bytes().await.unwrap().as_ref(), svg);
        let gif = b"GIF89a\x01\0\x01\0\0\0\0;";
        let secret = secret_of(&upload(srv, "a.gif", gif).await);
        let res = get(srv, &secret, "/5x5/0x0:1x1").await;
        assert_eq!(res.headers()["Content-Type"], "image/gif");
        assert_eq!(res.bytes().await.unwrap().as_ref(), gif);
    }

    /// Identical requests at the same time compute the variant once; later ones read it; it
    /// goes with its file.
    async fn concurrent_identical_requests_compute_once(srv) {
        let uploaded = upload(srv, "photo.jpg", &picture(1200, 900, ImageFormat::Jpeg)).await;
        let secret = secret_of(&uploaded);
        let requests = (0..8).map(|_| get(srv, &secret, "/123x77!"));
        let answers = futures_util::future::join_all(requests).await;
        let mut misses = 0;
        let mut bodies = Vec::new();
        for res in answers {
            assert_eq!(res.status(), 200);
            if res.headers()["X-Cache"] == "MISS" {
                misses += 1;
            }
            bodies.push(res.bytes().await.unwrap());
        }
        assert_eq!(misses, 1, "one request computes the variant");
        assert!(bodies.windows(2).all(|w| w[0] == w[1]), "every answer is the same image");
        let again = get(srv, &secret, "/123x77!/photo.jpg").await;
        assert_eq!(again.headers()["X-Cache"], "HIT");
        // The secret in capitals names the same file, and so the same variant.
        let capitals = get(srv, &secret.to_uppercase(), "/123x77!").await;
        assert_eq!(capitals.headers()["X-Cache"], "HIT");
        let variants = format!("variants/{SERVICE_ID}/{secret}/");
        let of_the_file = |keys: Vec<String>| -> Vec<String> {
            keys.into_iter().filter(|k| k.starts_with(&variants)).collect()
        };
        assert_eq!(of_the_file(srv.store.keys().await).len(), 1, "one variant is stored");
        srv.data(&format!(r#"mutation {{ deleteFile(id: "{}") {{ id }} }}"#, uploaded["id"].as_str().unwrap())).await;
        let mut waited = 0;
        while !of_the_file(srv.store.keys().await).is_empty() && waited < 100 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            waited += 1;
        }
        assert_eq!(of_the_file(srv.store.keys().await), Vec::<String>::new(), "the variants of a deleted file stay");
        assert_eq!(stored(srv, &secret).await, None);
        assert_eq!(get(srv, &secret, "/123x77!").await.status(), 404);
    }

    /// The binary's `sweep-files` removes what no `File` node names: the object and variant of a
    /// file whose node went without them (as when the server stops between a deletion's commit
    /// and its removal) and an object whose node was never written (an upload cut short), but
    /// only once they are older than its grace period; `--dry-run` lists them and removes
    /// nothing; every file a node names, its variants and what is not of this service's
    /// layout stay.
    async fn sweeping_removes_the_objects_no_file_names(srv) {
        let png = picture(40, 30, ImageFormat::Png);
        let kept = upload(srv, "kept.png", &png).await;
        let lost = upload(srv, "lost.png", &png).await;
        let (kept, lost_id, lost) = (
            kept["secret"].as_str().unwrap().to_owned(),
            lost["id"].as_str().unwrap().to_owned(),
            lost["secret"].as_str().unwrap().to_owned(),
        );
        for secret in [&kept, &lost] {
            assert_eq!(size_of(srv, secret, "/20x15", "image/png").await, (20, 15));
        }
        srv.database()
            .execute(&[format!(r#"DELETE FROM "File" WHERE "id" = '{lost_id}'"#)])
            .await;
        let stray = "cl000000000000000000stray";
        srv.store.put(&format!("{SERVICE_ID}/{stray}"), b"half an upload").await;
        srv.store.put("elsewhere/notes.txt", b"not the service's").await;
        let before = srv.store.keys().await;
        let orphans: Vec<String> = before
            .iter()
            .filter(|k| k.contains(&lost) || k.contains(stray))
            .cloned()
            .collect();
        assert_eq!(orphans.len(), 3, "{before:?}");

        // Everything is younger than the default grace of an hour.
        let out = sweep(srv, &[]);
        assert!(out.ends_with("Removed 0 objects (0 bytes) that no File node names; kept 0 files, and 5 objects younger than 60 minutes\n"), "{out}");
        assert_eq!(srv.store.keys().await, before);

        let out = sweep(srv, &["--older-than-minutes", "0", "--dry-run"]);
        assert_eq!(keys_after(&out, "would remove "), orphans, "{out}");
        assert!(out.contains("Would remove 3 objects"), "{out}");
        assert!(out.contains("kept 1 files, and 0 objects younger"), "{out}");
        assert_eq!(srv.store.keys().await, before, "a dry run removes nothing");

        let out = sweep(srv, &["--older-than-minutes", "0"]);
        assert_eq!(keys_after(&out, "removed "), orphans, "{out}");
        let after = srv.store.keys().await;
        let left: Vec<String> = before.into_iter().filter(|k| !orphans.contains(k)).collect();
        assert_eq!(after, left);
        assert!(after.contains(&"elsewhere/notes.txt".to_owned()), "{after:?}");
        assert_eq!(size_of(srv, &kept, "/20x15", "image/png").await, (20, 15));
        assert_eq!(stored(srv, &kept).await.as_deref(), Some(png.as_slice()));
        // A second sweep finds nothing more.
        let out = sweep(srv, &["--older-than-minutes", "0"]);
        assert!(out.contains("Removed 0 objects"), "{out}");
    }
}

/// Runs the example binary's `sweep-files` with `args` on `srv`'s database and store; its
/// standard output. Fails the test when the command fails.
fn sweep(srv: &Server, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_example-server"))
        .arg("sweep-files")
        .args(args)
        .args([
            "--database-url",
            &srv.database().url,
            "--file-store",
            &srv.store.location,
        ])
        .args(["--service-id", SERVICE_ID])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cannot run the example-server binary");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The keys of the lines of `out` that start with `verb`, sorted.
fn keys_after(out: &str, verb: &str) -> Vec<String> {
    let mut keys: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix(verb))
        .map(str::to_owned)
        .collect();
    keys.sort();
    keys
}

/// The CRC-32 of PNG chunks.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
