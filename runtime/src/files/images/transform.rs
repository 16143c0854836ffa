//! Computing one variant of an image (reference §9.2): decode within limits, turn upright by the
//! EXIF orientation, crop, resize (Lanczos-3, as sharp does by default), encode in the format
//! the image came in. Runs on a blocking thread; it allocates only after the header said the
//! image is within [`MAX_INPUT_SIDE`], so a small file that claims huge dimensions costs nothing.

use std::io::Cursor;

use fast_image_resize::{FilterType, ResizeAlg, ResizeOptions, Resizer};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, PngEncoder};
use image::codecs::webp::WebPEncoder;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};

use super::ops::{Crop, Ops};

/// The largest width or height of an image the API decodes.
pub const MAX_INPUT_SIDE: u32 = 10_000;

/// The most memory one decode may allocate.
const MAX_ALLOC: u64 = 512 * 1024 * 1024;

/// JPEG quality of computed variants (sharp's default).
const JPEG_QUALITY: u8 = 80;

/// Why an image could not be computed; the text is answered with HTTP 400.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// The formats the API computes variants of (GIF and SVG are served as stored).
fn supported(format: ImageFormat) -> bool {
    matches!(
        format,
        ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Bmp | ImageFormat::WebP
    )
}

/// The variant of `source` that `ops` describe, in the source's format.
///
/// A decoder that panics on a malformed file refuses that file like any other it cannot read, so
/// the request gets a clear answer; the known case (a PNG palette of a length the format does not
/// allow, which panicked in the `png` crate) is refused before decoding, in [`open`].
pub fn apply(source: &[u8], ops: &Ops) -> Result<Vec<u8>, Refused> {
    std::panic::catch_unwind(|| variant(source, ops)).unwrap_or_else(|_| {
        Err(Refused(
            "Error: The image could not be read: its data is malformed".to_owned(),
        ))
    })
}

fn variant(source: &[u8], ops: &Ops) -> Result<Vec<u8>, Refused> {
    // Declared first: the decoder may borrow it.
    let shortened: Vec<u8>;
    let (format, mut decoder) = open(source)?;
    let (width, height) = decoder.dimensions();
    let orientation = decoder.orientation().map_err(unreadable)?;
    // A crop of an upright baseline JPEG needs only the rows down to its bottom edge: the same
    // bytes under a header that says the image ends there decode just those rows (a crop of the
    // top 400 rows of 1500 decodes in about a third of the time).
    if let (ImageFormat::Jpeg, Orientation::NoTransforms, Some(crop)) =
        (format, orientation, ops.crop)
        && let Some(bytes) = jpeg_rows(source, crop.y.saturating_add(crop.height))
    {
        shortened = bytes;
        decoder = open(&shortened)?.1;
    }
    let mut image = DynamicImage::from_decoder(decoder).map_err(|e| match e {
        image::ImageError::Limits(_) => too_large(width, height),
        e => unreadable(e),
    })?;
    image.apply_orientation(orientation);
    if let Some(crop) = ops.crop {
        image = cropped(image, crop)?;
    }
    if let Some(resize) = ops.resize {
        let (w, h) = resize
            .bounded_target(image.width(), image.height())
            .map_err(Refused)?;
        image = resized(&image, w, h)?;
    }
    encode(&image, format)
}

/// Refuses a PNG whose palette (`PLTE`, before the first `IDAT`) does not hold whole RGB
/// entries, at most 256 of them, as the PNG specification requires: the `png` crate's palette
/// expansion panicked on such a file (found by `bench/fuzz`). Chunks it cannot walk are left to
/// the decoder, which refuses them.
fn png_palette(bytes: &[u8]) -> Result<(), Refused> {
    let mut rest = bytes.get(8..).unwrap_or_default();
    while let (Some(length), Some(kind)) = (rest.get(..4), rest.get(4..8)) {
        let length = u32::from_be_bytes([length[0], length[1], length[2], length[3]]) as usize;
        match kind {
            b"PLTE" if !length.is_multiple_of(3) || length > 3 * 256 => {
                return Err(Refused(format!(
                    "Error: The image could not be read: its PNG palette has {length} bytes, not whole RGB entries (three bytes each, at most 256)"
                )));
            }
            b"PLTE" | b"IDAT" => return Ok(()),
            _ => {}
        }
        // Length, type, data, CRC.
        let Some(next) = length.checked_add(12).and_then(|n| rest.get(n..)) else {
            return Ok(());
        };
        rest = next;
    }
    Ok(())
}

fn unreadable(e: image::ImageError) -> Refused {
    Refused(format!("Error: The image could not be read: {e}"))
}

/// A decoder of `bytes` that has read the header, with the limits set: its dimensions decide
/// before anything is allocated for the pixels.
fn open(bytes: &[u8]) -> Result<(ImageFormat, Box<dyn ImageDecoder + '_>), Refused> {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| Refused(format!("Error: The image could not be read: {e}")))?;
    let Some(format) = reader.format().filter(|f| supported(*f)) else {
        return Err(Refused("File not an image".to_owned()));
    };
    if format == ImageFormat::Png {
        png_palette(bytes)?;
    }
    let mut decoder = reader.into_decoder().map_err(|e| match e {
        image::ImageError::Limits(_) => Refused(format!(
            "Error: The image is too large: at most {MAX_INPUT_SIDE} pixels on a side"
        )),
        e => unreadable(e),
    })?;
    let (width, height) = decoder.dimensions();
    if width > MAX_INPUT_SIDE || height > MAX_INPUT_SIDE {
        return Err(too_large(width, height));
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_INPUT_SIDE);
    limits.max_image_height = Some(MAX_INPUT_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    decoder
        .set_limits(limits)
        .map_err(|_| too_large(width, height))?;
    Ok((format, Box::new(decoder)))
}

/// A baseline (sequential) JPEG's bytes with its frame header saying it is `rows` high, rounded
/// up to whole rows of MCUs; `None` when that is not shorter, or the JPEG is progressive, or
/// its header cannot be read. Decoders stop after the rows the header names.
fn jpeg_rows(jpeg: &[u8], rows: u32) -> Option<Vec<u8>> {
    let mut at = 2;
    while at + 4 <= jpeg.len() {
        if jpeg[at] != 0xFF {
            return None;
        }
        let marker = jpeg[at + 1];
        if marker == 0xFF {
            at += 1;
            continue;
        }
        let length = usize::from(u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]));
        match marker {
            // Baseline and extended sequential, Huffman-coded.
            0xC0 | 0xC1 => {
                let frame = jpeg.get(at + 4..at + 2 + length)?;
                let height = u32::from(u16::from_be_bytes([*frame.get(1)?, *frame.get(2)?]));
                let components = usize::from(*frame.get(5)?);
                let mut vmax = 1;
                for c in 0..components {
                    vmax = vmax.max(u32::from(*frame.get(6 + c * 3 + 1)? & 0x0F));
                }
                let mcu = 8 * vmax;
                let wanted = rows.div_ceil(mcu) * mcu;
                if height == 0 || wanted >= height {
                    return None;
                }
                let mut out = jpeg.to_vec();
                let wanted = u16::try_from(wanted).ok()?.to_be_bytes();
                out[at + 5..at + 7].copy_from_slice(&wanted);
                return Some(out);
            }
            // Any other frame (progressive, arithmetic, lossless), or scan data before a frame.
            0xC2..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF | 0xDA => return None,
            _ => at += 2 + length,
        }
    }
    None
}

fn too_large(width: u32, height: u32) -> Refused {
    Refused(format!(
        "Error: The image is too large: {width}x{height} pixels, at most {MAX_INPUT_SIDE} on a side"
    ))
}

/// The part of `image` inside `crop`, clipped to the image.
fn cropped(image: DynamicImage, crop: Crop) -> Result<DynamicImage, Refused> {
    if crop.x >= image.width() || crop.y >= image.height() {
        return Err(Refused(format!(
            "Error: The crop area {}x{}:{}x{} lies outside the image ({}x{})",
            crop.x,
            crop.y,
            crop.width,
            crop.height,
            image.width(),
            image.height()
        )));
    }
    let width = crop.width.min(image.width() - crop.x);
    let height = crop.height.min(image.height() - crop.y);
    Ok(image.crop_imm(crop.x, crop.y, width, height))
}

fn resized(image: &DynamicImage, width: u32, height: u32) -> Result<DynamicImage, Refused> {
    if (width, height) == (image.width(), image.height()) {
        return Ok(image.clone());
    }
    let mut out = DynamicImage::new(width, height, image.color());
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3));
    Resizer::new()
        .resize(image, &mut out, &options)
        .map_err(|e| Refused(format!("Error: The image could not be resized: {e}")))?;
    Ok(out)
}

fn encode(image: &DynamicImage, format: ImageFormat) -> Result<Vec<u8>, Refused> {
    let failed =
        |e: image::ImageError| Refused(format!("Error: The image could not be written: {e}"));
    let mut out = Vec::new();
    match format {
        ImageFormat::Jpeg => {
            // JPEG has no alpha channel.
            let rgb;
            let image = if image.color().has_alpha() {
                rgb = DynamicImage::ImageRgb8(image.to_rgb8());
                &rgb
            } else {
                image
            };
            image
                .write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))
                .map_err(failed)?;
        }
        ImageFormat::Png => image
            .write_with_encoder(PngEncoder::new_with_quality(
                &mut out,
                CompressionType::Fast,
                image::codecs::png::FilterType::Adaptive,
            ))
            .map_err(failed)?,
        ImageFormat::WebP => image
            .write_with_encoder(WebPEncoder::new_lossless(&mut out))
            .map_err(failed)?,
        _ => image
            .write_to(&mut Cursor::new(&mut out), format)
            .map_err(failed)?,
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::images::ops::parse;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        });
        let mut out = Vec::new();
        DynamicImage::ImageRgb8(image)
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    fn dimensions(bytes: &[u8]) -> (u32, u32) {
        let image = image::load_from_memory(bytes).unwrap();
        (image.width(), image.height())
    }

    /// The `bench/fuzz` finding (`fuzz/regressions/image_decode/`): a 10 × 10 indexed PNG whose
    /// palette chunk holds 49 bytes made the `png` crate panic; it is refused, and so is a
    /// palette of more than 256 entries, while a valid indexed PNG still decodes.
    #[test]
    fn png_palettes_that_are_not_whole_entries_are_refused() {
        let found = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fuzz/regressions/image_decode/png-palette-of-49-bytes"
        ))
        .expect("the regression input");
        // The target's input: one byte of path length, the path, the image.
        let n = usize::from(found[0]);
        let ops_text = std::str::from_utf8(&found[1..=n]).unwrap();
        let ops = parse(&[ops_text]).unwrap();
        let image = &found[1 + n..];
        let refused = apply(image, &ops).unwrap_err();
        assert!(
            refused.0.contains("PNG palette has 49 bytes"),
            "{refused:?}"
        );

        let indexed = |entries: usize| {
            let mut out = Vec::new();
            let mut encoder = png::Encoder::new(&mut out, 2, 2);
            encoder.set_color(png::ColorType::Indexed);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_palette(vec![7u8; 3 * entries]);
            encoder
                .write_header()
                .unwrap()
                .write_image_data(&[0, 1, 1, 0])
                .unwrap();
            out
        };
        let ops = parse(&["1x1"]).unwrap();
        assert_eq!(dimensions(&apply(&indexed(2), &ops).unwrap()), (1, 1));
        // 257 entries: the chunk is refused before any decoder reads it (so no CRC is needed).
        let mut too_long = indexed(2);
        let at = too_long
            .windows(4)
            .position(|w| w == b"PLTE")
            .expect("a palette chunk")
            - 4;
        too_long[at..at + 4].copy_from_slice(&771u32.to_be_bytes());
        let refused = apply(&too_long, &ops).unwrap_err();
        assert!(refused.0.contains("has 771 bytes"), "{refused:?}");
    }

    #[test]
    fn crop_then_resize() {
        let source = png(200, 100);
        let ops = parse(&["50x50", "10x10:100x40"]).unwrap();
        assert_eq!(dimensions(&apply(&source, &ops).unwrap()), (50, 20));
        let ops = parse(&["150x10:100x100"]).unwrap();
        assert_eq!(dimensions(&apply(&source, &ops).unwrap()), (50, 90));
        let ops = parse(&["200x0:10x10"]).unwrap();
        assert_eq!(
            apply(&source, &ops),
            Err(Refused(
                "Error: The crop area 200x0:10x10 lies outside the image (200x100)".into()
            ))
        );
    }

    #[test]
    fn a_crop_of_a_jpeg_decodes_only_the_rows_it_needs() {
        let source = {
            let image = image::RgbImage::from_fn(64, 100, |x, y| {
                image::Rgb([(x * 4) as u8, (y * 2) as u8, ((x + y) % 256) as u8])
            });
            let mut out = Vec::new();
            DynamicImage::ImageRgb8(image)
                .write_to(&mut Cursor::new(&mut out), ImageFormat::Jpeg)
                .unwrap();
            out
        };
        let shortened = jpeg_rows(&source, 20).expect("a shorter header");
        let short = image::load_from_memory(&shortened).unwrap();
        let full = image::load_from_memory(&source).unwrap();
        // 20 rows, rounded up to whole rows of MCUs (8 or 16 rows, by the chroma sampling).
        let rows = short.height();
        assert!(
            short.width() == 64 && (20..=32).contains(&rows) && rows.is_multiple_of(8),
            "{rows}"
        );
        assert_eq!(
            short.to_rgb8().as_raw()[..],
            full.crop_imm(0, 0, 64, rows).to_rgb8().as_raw()[..]
        );
        assert_eq!(jpeg_rows(&source, 100), None);
        assert_eq!(jpeg_rows(&source, 99), None);
        let ops = parse(&["10x5:30x10"]).unwrap();
        let out = image::load_from_memory(&apply(&source, &ops).unwrap()).unwrap();
        assert_eq!((out.width(), out.height()), (30, 10));
    }

    /// One given side of a very tall or wide image would make the other side huge (a
    /// 1 × 10 000 PNG of 124 bytes at `10000x` is 10 000 × 100 000 000): refused before
    /// anything is allocated for it.
    #[test]
    fn a_ratio_that_makes_a_side_too_large_is_refused() {
        let tall = png(1, 10_000);
        assert_eq!(
            apply(&tall, &parse(&["500x"]).unwrap()),
            Err(Refused(
                "Limit exceeded. Width (500) or height (5000000) must not be bigger than 10000"
                    .into()
            ))
        );
        let wide = png(10_000, 1);
        assert_eq!(
            apply(&wide, &parse(&["x10000"]).unwrap()),
            Err(Refused(
                "Limit exceeded. Width (100000000) or height (10000) must not be bigger than 10000"
                    .into()
            ))
        );
        assert_eq!(
            dimensions(&apply(&tall, &parse(&["x5000"]).unwrap()).unwrap()),
            (1, 5000)
        );
    }

    #[test]
    fn not_an_image_and_bombs_are_refused() {
        assert_eq!(
            apply(b"hello, world", &parse(&["10x10"]).unwrap()),
            Err(Refused("File not an image".into()))
        );
        // A BMP whose header claims 60000 x 60000 pixels, with one pixel after it.
        let mut bomb = Vec::new();
        DynamicImage::ImageRgb8(image::RgbImage::new(1, 1))
            .write_to(&mut Cursor::new(&mut bomb), ImageFormat::Bmp)
            .unwrap();
        bomb[18..22].copy_from_slice(&60_000i32.to_le_bytes());
        bomb[22..26].copy_from_slice(&60_000i32.to_le_bytes());
        assert_eq!(
            apply(&bomb, &parse(&["10x10"]).unwrap()),
            Err(Refused(
                "Error: The image is too large: 60000x60000 pixels, at most 10000 on a side".into()
            ))
        );
    }
}
