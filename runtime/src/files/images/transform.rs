//! Computing one variant of an image (reference §9.2): decode within limits, turn upright by the
//! EXIF orientation, crop, resize (Lanczos-3, as sharp does by default), encode in the format
//! the image came in. Runs on a blocking thread; it allocates only after the header said the
//! image is within [`MAX_INPUT_SIDE`], so a small file that claims huge dimensions costs nothing.
//!
//! A JPEG made at least half as small is decoded shrunk (as sharp's shrink-on-load does): by
//! libjpeg-turbo's scaled IDCT (`decode_shrunk`), at 1/2, 1/4 or 1/8 of its size, then
//! resized the rest of the way. The variant's size is computed from the full size either way.

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
/// allow, which panicked in the `png` crate) is refused before decoding, in `open`.
pub fn apply(source: &[u8], ops: &Ops) -> Result<Vec<u8>, Refused> {
    std::panic::catch_unwind(|| variant(source, ops)).unwrap_or_else(|_| {
        Err(Refused(
            "Error: The image could not be read: its data is malformed".to_owned(),
        ))
    })
}

fn variant(source: &[u8], ops: &Ops) -> Result<Vec<u8>, Refused> {
    variant_with(source, ops, true)
}

/// [`variant`], with shrinking a JPEG as it is decoded allowed or not (the tests compare both).
fn variant_with(source: &[u8], ops: &Ops, shrink_on_load: bool) -> Result<Vec<u8>, Refused> {
    // Declared first: the decoder may borrow it.
    let shortened: Vec<u8>;
    let (format, mut decoder) = open(source)?;
    let (width, height) = decoder.dimensions();
    let orientation = decoder.orientation().map_err(unreadable)?;
    if let (true, ImageFormat::Jpeg, None, Some(resize)) =
        (shrink_on_load, format, ops.crop, ops.resize)
    {
        let upright = if turns(orientation) {
            (height, width)
        } else {
            (width, height)
        };
        let (w, h) = resize
            .bounded_target(upright.0, upright.1)
            .map_err(Refused)?;
        let shrink = jpeg_shrink(upright, (w, h));
        if shrink > 1
            && sequential(source).is_some_and(|jpeg| jpeg.one_scan && jpeg.precision == 8)
            && let Some(mut image) = decode_shrunk(source, shrink)?
        {
            image.apply_orientation(orientation);
            return encode(&resized(&image, w, h)?, format);
        }
    }
    // A crop of an upright baseline JPEG needs only the rows down to its bottom edge: the same
    // bytes under a header that says the image ends there decode just those rows (a crop of the
    // top 400 rows of 1500 decodes in about a third of the time).
    let mut rows = None;
    if let (ImageFormat::Jpeg, Orientation::NoTransforms, Some(crop)) =
        (format, orientation, ops.crop)
    {
        let bottom = crop.y.saturating_add(crop.height);
        rows = decode_rows(source, bottom, CUT_SLACK);
        if rows.is_none()
            && let Some(bytes) = jpeg_rows(source, bottom)
        {
            shortened = bytes;
            decoder = open(&shortened)?.1;
        }
    }
    let mut image = match rows {
        Some(image) => image,
        None => DynamicImage::from_decoder(decoder).map_err(|e| match e {
            image::ImageError::Limits(_) => too_large(width, height),
            e => unreadable(e),
        })?,
    };
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

/// Whether an EXIF orientation turns the image a quarter (its width becomes its height).
fn turns(orientation: Orientation) -> bool {
    matches!(
        orientation,
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    )
}

/// The factor a JPEG of `size` is shrunk by as it is decoded, for a variant of `target` size:
/// the largest of 8, 4 and 2 that leaves the decoded image at least as large as the target on
/// both sides (the choice of sharp's default `fastShrinkOnLoad`), else 1.
fn jpeg_shrink(size: (u32, u32), target: (u32, u32)) -> u32 {
    let factor = f64::min(
        f64::from(size.0) / f64::from(target.0.max(1)),
        f64::from(size.1) / f64::from(target.1.max(1)),
    );
    [8, 4, 2]
        .into_iter()
        .find(|&shrink| factor >= f64::from(shrink))
        .unwrap_or(1)
}

/// `jpeg` decoded at 1/`shrink` of its size (2, 4 or 8) by libjpeg-turbo's scaled IDCT, which
/// skips most of the inverse transform and the full-size colour conversion; RGB, or luma for a
/// grayscale JPEG. `None` for a colour space it does not turn into those (CMYK, YCCK): the
/// caller decodes that one at full size. Called only for a sequential JPEG of one scan and
/// 8-bit samples ([`sequential`]), so libjpeg keeps no coefficients of the whole image.
fn decode_shrunk(jpeg: &[u8], shrink: u32) -> Result<Option<DynamicImage>, Refused> {
    let read = || -> std::io::Result<Option<DynamicImage>> {
        let mut decompress = mozjpeg::Decompress::new_mem(jpeg)?;
        let gray = match decompress.color_space() {
            mozjpeg::ColorSpace::JCS_GRAYSCALE => true,
            mozjpeg::ColorSpace::JCS_YCbCr | mozjpeg::ColorSpace::JCS_RGB => false,
            _ => return Ok(None),
        };
        // `shrink` is 2, 4 or 8: a scale of 4, 2 or 1 eighths.
        decompress.scale(u8::try_from(8 / shrink).unwrap_or(8));
        let mut started = if gray {
            decompress.grayscale()?
        } else {
            decompress.rgb()?
        };
        let (width, height) = (started.width(), started.height());
        let pixels: Vec<u8> = started.read_scanlines()?;
        started.finish()?;
        let short = || std::io::Error::other("its data ends before its last row");
        let (w, h) = (
            u32::try_from(width).map_err(|_| short())?,
            u32::try_from(height).map_err(|_| short())?,
        );
        Ok(Some(if gray {
            DynamicImage::ImageLuma8(image::GrayImage::from_raw(w, h, pixels).ok_or_else(short)?)
        } else {
            DynamicImage::ImageRgb8(image::RgbImage::from_raw(w, h, pixels).ok_or_else(short)?)
        }))
    };
    // libjpeg reports an error by unwinding out of the library with its message.
    match std::panic::catch_unwind(read) {
        Ok(read) => read.map_err(|e| Refused(format!("Error: The image could not be read: {e}"))),
        Err(payload) => Err(Refused(format!(
            "Error: The image could not be read: {}",
            payload
                .downcast_ref::<String>()
                .map_or("its data is malformed", |message| {
                    message.trim_start_matches("libjpeg fatal error: ")
                })
        ))),
    }
}

/// What the headers of a sequential, Huffman-coded JPEG (baseline or extended) say, up to its
/// first scan.
struct Sequential {
    /// Where its frame header (`SOF0` or `SOF1`) begins.
    frame: usize,
    /// Bits per sample.
    precision: u8,
    /// Whether its first scan holds every component, so that it is the only one.
    one_scan: bool,
    /// Where the first scan's entropy-coded data begins (after its `SOS` header).
    data: usize,
}

/// The headers of `jpeg` when it is sequential and Huffman-coded; `None` for any other JPEG
/// (progressive, arithmetic, lossless) or headers that cannot be walked.
fn sequential(jpeg: &[u8]) -> Option<Sequential> {
    let mut at = 2;
    let mut frame = None;
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
            0xC0 | 0xC1 if frame.is_none() => frame = Some(at),
            // Any other frame (progressive, arithmetic, lossless), or a second one.
            0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => return None,
            0xDA => {
                let frame = frame?;
                // SOF: marker, length, precision, height, width, component count.
                let components = *jpeg.get(frame + 9)?;
                return Some(Sequential {
                    frame,
                    precision: *jpeg.get(frame + 4)?,
                    one_scan: *jpeg.get(at + 4)? == components,
                    data: at + 2 + length,
                });
            }
            _ => {}
        }
        at += 2 + length;
    }
    None
}

/// Where a baseline (sequential) JPEG's frame header is, and the height it would say to
/// decode `rows` rows (rounded up to whole rows of MCUs), with the share of the image's rows
/// that is; `None` when that is not shorter, or the JPEG is progressive, or its header cannot
/// be read.
fn rows_header(jpeg: &[u8], rows: u32) -> Option<(Sequential, [u8; 2], f64)> {
    let scan = sequential(jpeg)?;
    let at = scan.frame;
    let length = usize::from(u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]));
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
    let share = f64::from(wanted) / f64::from(height);
    Some((scan, u16::try_from(wanted).ok()?.to_be_bytes(), share))
}

/// A baseline (sequential) JPEG's bytes with its frame header saying it is `rows` high, rounded
/// up to whole rows of MCUs; `None` as for [`rows_header`]. Decoders stop after the rows the
/// header names.
fn jpeg_rows(jpeg: &[u8], rows: u32) -> Option<Vec<u8>> {
    let (scan, wanted, _) = rows_header(jpeg, rows)?;
    let mut out = jpeg.to_vec();
    out[scan.frame + 5..scan.frame + 7].copy_from_slice(&wanted);
    Some(out)
}

/// How much more of a JPEG's entropy-coded data [`jpeg_rows_cut`] keeps than the rows' share
/// of the image: an eighth more, and 16 KiB (rows at the top may hold more detail than the
/// average; a cut too early costs a second decode, never a wrong pixel).
const CUT_SLACK: (f64, usize) = (1.125, 16 * 1024);

/// The bytes of [`jpeg_rows`] with the entropy-coded data cut after the rows' share of it
/// (grown by `slack`) and a marker no JPEG uses (`FF 01`) in its place; `None` when that keeps
/// nearly everything. After the rows it names, a decoder looks for the next marker byte by
/// byte (zune-jpeg, for the end of the image): through the rest of the data, about 1 ms for
/// the top 400 rows of the benchmark's 2000 × 1500 photo, now a few bytes.
fn jpeg_rows_cut(jpeg: &[u8], rows: u32, slack: (f64, usize)) -> Option<Vec<u8>> {
    let (scan, wanted, share) = rows_header(jpeg, rows)?;
    let data = jpeg.len().checked_sub(scan.data)?;
    // At most the whole data, so the conversion back saturates nowhere.
    let kept = (data as f64 * share * slack.0).min(data as f64) as usize;
    let mut cut = scan.data + kept.saturating_add(slack.1);
    if cut + 2 >= jpeg.len() {
        return None;
    }
    // Not between a 0xFF and the byte that says what it is.
    while cut > scan.data && jpeg[cut - 1] == 0xFF {
        cut -= 1;
    }
    let mut out = Vec::with_capacity(cut + 2);
    out.extend_from_slice(&jpeg[..cut]);
    out[scan.frame + 5..scan.frame + 7].copy_from_slice(&wanted);
    out.extend_from_slice(&[0xFF, 0x01]);
    Some(out)
}

/// The top `rows` rows (rounded up to whole rows of MCUs) of a baseline JPEG, decoded by
/// zune-jpeg from [`jpeg_rows_cut`]'s bytes in strict mode: a decoder that reaches the cut
/// before the rows end meets the unknown marker and fails (not strict, it would fill the rest
/// grey), and then `None`, as for a JPEG of another kind: the caller decodes as before. The
/// pixels are those `image`'s decoder (zune-jpeg too) gives for the same rows.
fn decode_rows(jpeg: &[u8], rows: u32, slack: (f64, usize)) -> Option<DynamicImage> {
    use zune_core::colorspace::ColorSpace;
    let bytes = jpeg_rows_cut(jpeg, rows, slack)?;
    let side = MAX_INPUT_SIDE as usize;
    let options = zune_core::options::DecoderOptions::default()
        .set_strict_mode(true)
        .set_max_width(side)
        .set_max_height(side);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(
        zune_core::bytestream::ZCursor::new(bytes.as_slice()),
        options,
    );
    decoder.decode_headers().ok()?;
    let out = match decoder.input_colorspace()? {
        ColorSpace::YCbCr | ColorSpace::RGB => ColorSpace::RGB,
        ColorSpace::Luma => ColorSpace::Luma,
        _ => return None,
    };
    decoder.set_options(decoder.options().jpeg_set_out_colorspace(out));
    let (width, height) = decoder.dimensions()?;
    let (width, height) = (u32::try_from(width).ok()?, u32::try_from(height).ok()?);
    let pixels = decoder.decode().ok()?;
    match out {
        ColorSpace::Luma => {
            image::GrayImage::from_raw(width, height, pixels).map(DynamicImage::ImageLuma8)
        }
        _ => image::RgbImage::from_raw(width, height, pixels).map(DynamicImage::ImageRgb8),
    }
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

    /// `image` written as a file of `format`, by the `image` crate's default encoder.
    fn written(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Vec::new();
        image.write_to(&mut Cursor::new(&mut out), format).unwrap();
        out
    }

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        });
        written(&DynamicImage::ImageRgb8(image), ImageFormat::Png)
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

    /// A JPEG of a smooth picture with fine lines over it (`rgb: false` gives a grayscale one),
    /// optionally with an EXIF orientation of 6 (turn a quarter to the right).
    fn jpeg(width: u32, height: u32, rgb: bool, turned: bool) -> Vec<u8> {
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            let line = if (x / 7 + y / 5) % 2 == 0 { 30 } else { 0 };
            image::Rgb([
                (x * 200 / width) as u8 + line,
                (y * 200 / height) as u8 + line,
                ((x + y) * 100 / (width + height)) as u8,
            ])
        });
        let image = if rgb {
            DynamicImage::ImageRgb8(image)
        } else {
            DynamicImage::ImageLuma8(DynamicImage::ImageRgb8(image).to_luma8())
        };
        let plain = written(&image, ImageFormat::Jpeg);
        if !turned {
            return plain;
        }
        // APP1: "Exif\0\0", a big-endian TIFF header, one IFD of one entry: 0x0112
        // (Orientation), SHORT, count 1, value 6.
        let mut exif = b"Exif\0\0MM\0\x2a\0\0\0\x08".to_vec();
        exif.extend_from_slice(&[0, 1, 1, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0, 0]);
        let mut out = plain[..2].to_vec();
        out.extend_from_slice(&[0xFF, 0xE1]);
        out.extend_from_slice(&u16::try_from(exif.len() + 2).unwrap().to_be_bytes());
        out.extend_from_slice(&exif);
        out.extend_from_slice(&plain[2..]);
        out
    }

    /// The mean difference of two images' samples, which must be of one size and colour type.
    fn mean_difference(a: &[u8], b: &[u8]) -> f64 {
        let (a, b) = (
            image::load_from_memory(a).unwrap(),
            image::load_from_memory(b).unwrap(),
        );
        assert_eq!(
            (a.width(), a.height(), a.color()),
            (b.width(), b.height(), b.color())
        );
        let (a, b) = (a.as_bytes(), b.as_bytes());
        let sum: u64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| u64::from(x.abs_diff(*y)))
            .sum();
        sum as f64 / a.len() as f64
    }

    #[test]
    fn the_shrink_on_load_is_sharps() {
        // The benchmark's fit: 2000 x 1500 into 300 x 200 is 267 x 200, a factor of 7.5.
        assert_eq!(jpeg_shrink((2000, 1500), (267, 200)), 4);
        assert_eq!(jpeg_shrink((2000, 1500), (250, 187)), 8);
        assert_eq!(jpeg_shrink((400, 400), (250, 250)), 1);
        assert_eq!(jpeg_shrink((200, 100), (100, 50)), 2);
        assert_eq!(jpeg_shrink((200, 100), (101, 50)), 1);
        // A side ignored by the aspect (`!`) counts too.
        assert_eq!(jpeg_shrink((400, 300), (200, 200)), 1);
    }

    /// A JPEG made half as large or less is decoded shrunk, and gives the variant the full
    /// decode gives (the same size and colour type, the samples within a few levels), turned by
    /// its orientation; RGB and grayscale alike.
    #[test]
    fn a_jpeg_made_smaller_is_decoded_shrunk_to_the_same_picture() {
        for (rgb, turned, ops, size) in [
            (true, false, "100x100", (100, 75)),
            (true, false, "200x", (200, 150)),
            (false, false, "x60", (80, 60)),
            (true, true, "x200", (150, 200)),
            (false, true, "50x", (50, 67)),
        ] {
            let source = jpeg(800, 600, rgb, turned);
            let ops = parse(&[ops]).unwrap();
            let shrunk = variant_with(&source, &ops, true).unwrap();
            let full = variant_with(&source, &ops, false).unwrap();
            assert_eq!(dimensions(&shrunk), size, "{ops:?}");
            // Not the full decode's bytes: the shrunk decode did run.
            assert_ne!(shrunk, full, "{ops:?}");
            let difference = mean_difference(&shrunk, &full);
            assert!(difference < 6.0, "{ops:?}: {difference}");
            assert_eq!(apply(&source, &ops).unwrap(), shrunk);
        }
        // (Fine lines decoded a quarter as large differ by up to about 4 levels.) The bound tells
        // orientation apart: the same picture at the same size, not turned (what the shrunk
        // path would give without its orientation), differs by far more.
        let turned = variant_with(
            &jpeg(800, 600, true, true),
            &parse(&["x200"]).unwrap(),
            false,
        );
        let not_turned = variant_with(
            &jpeg(800, 600, true, false),
            &parse(&["150x200!"]).unwrap(),
            true,
        );
        let difference = mean_difference(&turned.unwrap(), &not_turned.unwrap());
        assert!(difference > 20.0, "{difference}");
        // A crop is decoded at full size: its coordinates are the full image's.
        let source = jpeg(800, 600, true, false);
        let ops = parse(&["0x0:800x600", "100x100"]).unwrap();
        assert_eq!(
            variant_with(&source, &ops, true).unwrap(),
            variant_with(&source, &ops, false).unwrap()
        );
    }

    /// What libjpeg refuses while decoding shrunk is refused with its reason; a JPEG cut short
    /// is decoded as far as it goes, like the full decode does.
    #[test]
    fn a_broken_jpeg_decoded_shrunk_is_refused_or_read_as_far_as_it_goes() {
        let source = jpeg(800, 600, true, false);
        let ops = parse(&["100x100"]).unwrap();
        let cut = &source[..source.len() / 2];
        assert_eq!(dimensions(&apply(cut, &ops).unwrap()), (100, 75));
        assert_eq!(
            dimensions(&variant_with(cut, &ops, false).unwrap()),
            (100, 75)
        );
        // The first scan names a Huffman table (3) that was never defined.
        let scan = source
            .windows(2)
            .position(|w| w == [0xFF, 0xDA])
            .expect("a scan");
        let mut broken = source.clone();
        broken[scan + 6] = 0x33;
        let refused = decode_shrunk(&broken, 8).unwrap_err();
        assert_eq!(
            refused.0,
            "Error: The image could not be read: Huffman table 0x03 was not defined"
        );
        assert_eq!(apply(&broken, &ops), Err(refused));
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
        let image = image::RgbImage::from_fn(64, 100, |x, y| {
            image::Rgb([(x * 4) as u8, (y * 2) as u8, ((x + y) % 256) as u8])
        });
        let source = written(&DynamicImage::ImageRgb8(image), ImageFormat::Jpeg);
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

    /// A JPEG of `width` × `height` whose rows from `detail` down are one flat colour and the
    /// rows above them noise (which compresses badly), at the encoder's default quality.
    fn noisy_jpeg(width: u32, height: u32, detail: u32) -> Vec<u8> {
        let mut seed = 0x2545_f491_u32;
        let image = image::RgbImage::from_fn(width, height, |_, y| {
            if y >= detail {
                return image::Rgb([90, 120, 150]);
            }
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let [a, b, c, _] = seed.to_be_bytes();
            image::Rgb([a, b, c])
        });
        written(&DynamicImage::ImageRgb8(image), ImageFormat::Jpeg)
    }

    /// The rows of a crop are decoded from the data cut after their share of it: pixel for
    /// pixel what the whole file gives; a cut before their end is noticed (the decoder meets
    /// the marker put there) and the file decoded as before.
    #[test]
    fn a_crop_of_a_jpeg_reads_the_data_of_its_rows() {
        let source = noisy_jpeg(512, 600, 600);
        let full = image::load_from_memory(&source).unwrap();
        let cut = jpeg_rows_cut(&source, 100, CUT_SLACK).expect("a cut");
        assert!(
            cut.len() < source.len() / 2,
            "{} of {}",
            cut.len(),
            source.len()
        );
        let rows = decode_rows(&source, 100, CUT_SLACK).expect("decoded from the cut");
        assert_eq!(rows.width(), 512);
        assert!((100..=112).contains(&rows.height()), "{}", rows.height());
        assert_eq!(
            rows.to_rgb8().as_raw()[..],
            full.crop_imm(0, 0, 512, rows.height()).to_rgb8().as_raw()[..]
        );
        // Cut far too early: the decoder says so.
        assert!(decode_rows(&source, 100, (0.1, 0)).is_none());
        // The top rows hold nearly all the data, which their share of the rows misjudges.
        let top_heavy = noisy_jpeg(512, 600, 120);
        assert!(jpeg_rows_cut(&top_heavy, 100, CUT_SLACK).is_some());
        assert!(decode_rows(&top_heavy, 100, CUT_SLACK).is_none());
        // Through `apply`, both give the crop of the whole decode.
        for jpeg in [&source, &top_heavy] {
            let whole = image::load_from_memory(jpeg).unwrap();
            let ops = parse(&["10x20:200x80"]).unwrap();
            let out = image::load_from_memory(&apply(jpeg, &ops).unwrap()).unwrap();
            let expected = image::load_from_memory(
                &encode(&whole.crop_imm(10, 20, 200, 80), ImageFormat::Jpeg).unwrap(),
            )
            .unwrap();
            assert_eq!(out.to_rgb8().as_raw(), expected.to_rgb8().as_raw());
        }
        // Grey JPEGs too.
        let grey =
            image::GrayImage::from_fn(64, 400, |x, y| image::Luma([((x * 7 + y * 3) % 256) as u8]));
        let grey = written(&DynamicImage::ImageLuma8(grey), ImageFormat::Jpeg);
        let rows = decode_rows(&grey, 40, (1.0, 0)).expect("decoded from the cut");
        let whole = image::load_from_memory(&grey).unwrap();
        assert_eq!(rows.color(), image::ColorType::L8);
        assert_eq!(
            rows.as_bytes(),
            whole.crop_imm(0, 0, 64, rows.height()).as_bytes()
        );
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
        let mut bomb = written(
            &DynamicImage::ImageRgb8(image::RgbImage::new(1, 1)),
            ImageFormat::Bmp,
        );
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
