//! The operations of an Image API address (seed §4.7, reference §9.2): up to three path
//! segments after the file's secret, each a resize (`500x300`, `500x300!`, `500x`, `x300`), a
//! crop (`X x Y : W x H`, from the top-left corner) or a name (`photo.png`, cosmetic); the third
//! may only be a name. Cropping comes before resizing whatever the order of the segments.

/// The largest width or height a resize or crop may ask for.
pub const MAX_SIDE: u32 = 10_000;

/// An area of the image: `width` × `height` pixels from (`x`, `y`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crop {
    /// The left edge, in pixels from the image's left.
    pub x: u32,
    /// The top edge, in pixels from the image's top.
    pub y: u32,
    /// The width in pixels.
    pub width: u32,
    /// The height in pixels.
    pub height: u32,
}

/// How to resize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    /// `WxH`: as large as fits inside the box, keeping the aspect ratio.
    Fit {
        /// The box's width in pixels.
        width: u32,
        /// The box's height in pixels.
        height: u32,
    },
    /// `WxH!`: exactly this size.
    Exact {
        /// The width in pixels.
        width: u32,
        /// The height in pixels.
        height: u32,
    },
    /// `Wx`: this width, keeping the aspect ratio.
    Width(u32),
    /// `xH`: this height, keeping the aspect ratio.
    Height(u32),
}

impl Resize {
    /// The size an image of `width` × `height` gets: the box's sides rounded to the nearest
    /// pixel, at least one.
    pub fn target(self, width: u32, height: u32) -> (u32, u32) {
        let scaled = |side: u32, num: u32, den: u32| {
            let v = (f64::from(side) * f64::from(num) / f64::from(den.max(1))).round();
            (v as u32).max(1)
        };
        match self {
            Resize::Exact {
                width: w,
                height: h,
            } => (w, h),
            Resize::Width(w) => (w, scaled(height, w, width)),
            Resize::Height(h) => (scaled(width, h, height), h),
            Resize::Fit {
                width: w,
                height: h,
            } => {
                // The side that limits more decides; the other follows the ratio.
                if u64::from(w) * u64::from(height) <= u64::from(h) * u64::from(width) {
                    (w, scaled(height, w, width))
                } else {
                    (scaled(width, h, height), h)
                }
            }
        }
    }

    /// [`Resize::target`], when both its sides are at most [`MAX_SIDE`]: one given side keeps
    /// the image's ratio, and a very tall or wide image makes the other side far larger than
    /// any side a client may ask for.
    pub fn bounded_target(self, width: u32, height: u32) -> Result<(u32, u32), String> {
        let (w, h) = self.target(width, height);
        if w > MAX_SIDE || h > MAX_SIDE {
            return Err(format!(
                "Limit exceeded. Width ({w}) or height ({h}) must not be bigger than {MAX_SIDE}"
            ));
        }
        Ok((w, h))
    }
}

/// The operations of one address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ops {
    /// The crop, applied first; `None` keeps the whole image.
    pub crop: Option<Crop>,
    /// The resize, applied after the crop; `None` keeps the size.
    pub resize: Option<Resize>,
}

impl Ops {
    /// Whether the image is served as stored.
    pub fn is_none(&self) -> bool {
        self.crop.is_none() && self.resize.is_none()
    }

    /// The part of a variant's key that names these operations (the name segment is cosmetic
    /// and not part of it).
    pub fn key(&self) -> String {
        let mut key = String::new();
        if let Some(c) = self.crop {
            key.push_str(&format!("crop-{}-{}-{}-{}", c.x, c.y, c.width, c.height));
        }
        if let Some(r) = self.resize {
            if !key.is_empty() {
                key.push('_');
            }
            key.push_str(&match r {
                Resize::Fit { width, height } => format!("fit-{width}-{height}"),
                Resize::Exact { width, height } => format!("exact-{width}-{height}"),
                Resize::Width(w) => format!("width-{w}"),
                Resize::Height(h) => format!("height-{h}"),
            });
        }
        key
    }
}

/// Reads the segments after the secret (empty ones, from a trailing slash, are ignored).
/// The error is the reference's text, answered with HTTP 400.
pub fn parse(segments: &[&str]) -> Result<Ops, String> {
    let segments: Vec<&str> = segments.iter().copied().filter(|s| !s.is_empty()).collect();
    let mut ops = Ops::default();
    for (i, segment) in segments.iter().enumerate() {
        if i >= 2 {
            if i == 2 && is_name(segment) {
                continue;
            }
            return Err(format!("Error: Invalid name of image: {segment}"));
        }
        if let Some(resize) = resize(segment) {
            ops.resize = Some(resize?);
        } else if let Some(crop) = crop(segment) {
            ops.crop = Some(crop?);
        } else if !is_name(segment) {
            return Err(format!(
                "Error: Invalid resize, crop pattern or name of image: {segment}"
            ));
        }
    }
    Ok(ops)
}

/// A run of ASCII digits (possibly empty), as a number; `None` when it is not one. Numbers too
/// large for `u32` read as `u32::MAX`, which the limit then refuses.
fn digits(text: &str) -> Option<Option<u32>> {
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if text.is_empty() {
        return Some(None);
    }
    Some(Some(text.parse::<u32>().unwrap_or(u32::MAX)))
}

/// `^(\d*)x(\d*)(!?)$`.
fn resize(segment: &str) -> Option<Result<Resize, String>> {
    let (exact, body) = match segment.strip_suffix('!') {
        Some(body) => (true, body),
        None => (false, segment),
    };
    let (w, h) = body.split_once('x')?;
    let (w, h) = (digits(w)?, digits(h)?);
    Some(checked(w, h).map(|()| match (w, h) {
        (Some(width), Some(height)) if exact => Resize::Exact { width, height },
        (Some(width), Some(height)) => Resize::Fit { width, height },
        (Some(width), None) => Resize::Width(width),
        (None, Some(height)) => Resize::Height(height),
        (None, None) => Resize::Width(0),
    }))
}

/// `^(\d*)x(\d*):(\d*)x(\d*)$`, empty numbers read as 0.
fn crop(segment: &str) -> Option<Result<Crop, String>> {
    let (offset, size) = segment.split_once(':')?;
    let (x, y) = offset.split_once('x')?;
    let (w, h) = size.split_once('x')?;
    let [x, y, w, h] = [digits(x)?, digits(y)?, digits(w)?, digits(h)?].map(|n| n.unwrap_or(0));
    Some(checked(Some(w), Some(h)).map(|()| Crop {
        x,
        y,
        width: w,
        height: h,
    }))
}

/// The reference's checks of a width and height.
fn checked(w: Option<u32>, h: Option<u32>) -> Result<(), String> {
    if w.is_none() && h.is_none() {
        return Err("At least width or height must be provided".to_owned());
    }
    if w == Some(0) || h == Some(0) {
        return Err("Width or height must be positive".to_owned());
    }
    if w.unwrap_or(0) > MAX_SIDE || h.unwrap_or(0) > MAX_SIDE {
        let shown = |n: Option<u32>| n.map_or_else(String::new, |n| n.to_string());
        return Err(format!(
            "Limit exceeded. Width ({}) or height ({}) must not be bigger than {MAX_SIDE}",
            shown(w),
            shown(h)
        ));
    }
    Ok(())
}

/// `^(\w+)(.(png|jpg|jpeg|svg|gif|bmp|webp))?$`: a word, with one of the image extensions.
fn is_name(segment: &str) -> bool {
    let word = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    match segment.rsplit_once('.') {
        Some((stem, ext)) => {
            word(stem) && matches!(ext, "png" | "jpg" | "jpeg" | "svg" | "gif" | "bmp" | "webp")
        }
        None => word(segment),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(path: &str) -> Result<Ops, String> {
        parse(&path.split('/').collect::<Vec<_>>())
    }

    #[test]
    fn segments_in_any_order_crop_before_resize() {
        let crop = Crop {
            x: 0,
            y: 0,
            width: 400,
            height: 400,
        };
        let fit = Resize::Fit {
            width: 250,
            height: 250,
        };
        let both = Ops {
            crop: Some(crop),
            resize: Some(fit),
        };
        assert_eq!(ops("0x0:400x400/250x250"), Ok(both.clone()));
        assert_eq!(ops("250x250/0x0:400x400/photo.jpg"), Ok(both.clone()));
        assert_eq!(ops("250x250/0x0:400x400/"), Ok(both));
        assert_eq!(ops(""), Ok(Ops::default()));
        assert_eq!(ops("photo.png"), Ok(Ops::default()));
        assert_eq!(
            ops("x:x").map(|o| o.crop),
            Err("Width or height must be positive".to_owned())
        );
        assert_eq!(
            ops("10x20:30x40").map(|o| o.crop),
            Ok(Some(Crop {
                x: 10,
                y: 20,
                width: 30,
                height: 40
            }))
        );
    }

    #[test]
    fn resize_forms() {
        let r = |s: &str| ops(s).map(|o| o.resize);
        assert_eq!(
            r("500x300"),
            Ok(Some(Resize::Fit {
                width: 500,
                height: 300
            }))
        );
        assert_eq!(
            r("500x300!"),
            Ok(Some(Resize::Exact {
                width: 500,
                height: 300
            }))
        );
        assert_eq!(r("500x"), Ok(Some(Resize::Width(500))));
        assert_eq!(r("x300"), Ok(Some(Resize::Height(300))));
    }

    #[test]
    fn the_references_errors() {
        assert_eq!(ops("0x300"), Err("Width or height must be positive".into()));
        assert_eq!(
            ops("x"),
            Err("At least width or height must be provided".into())
        );
        assert_eq!(
            ops("10001x5"),
            Err("Limit exceeded. Width (10001) or height (5) must not be bigger than 10000".into())
        );
        assert_eq!(
            ops("x99999999999"),
            Err(format!(
                "Limit exceeded. Width () or height ({}) must not be bigger than 10000",
                u32::MAX
            ))
        );
        assert_eq!(
            ops("-5x5"),
            Err("Error: Invalid resize, crop pattern or name of image: -5x5".into())
        );
        assert_eq!(
            ops("my-photo.png"),
            Err("Error: Invalid resize, crop pattern or name of image: my-photo.png".into())
        );
        // A third segment is a name only: `\w+` takes `5x5`, not `5x5!`.
        assert_eq!(ops("5x5/5x5/5x5").map(|o| o.resize.is_some()), Ok(true));
        assert_eq!(
            ops("5x5/5x5/5x5!"),
            Err("Error: Invalid name of image: 5x5!".into())
        );
        assert_eq!(
            ops("5x5/a.png/b.png/c.png"),
            Err("Error: Invalid name of image: c.png".into())
        );
        assert_eq!(
            ops("photo.tiff"),
            Err("Error: Invalid resize, crop pattern or name of image: photo.tiff".into())
        );
    }

    #[test]
    fn targets_keep_the_ratio() {
        let fit = Resize::Fit {
            width: 300,
            height: 200,
        };
        assert_eq!(fit.target(2000, 1500), (267, 200));
        assert_eq!(fit.target(1500, 2000), (150, 200));
        assert_eq!(fit.target(3000, 1000), (300, 100));
        assert_eq!(Resize::Width(500).target(1000, 333), (500, 167));
        assert_eq!(Resize::Height(1).target(10000, 1), (10000, 1));
        assert_eq!(Resize::Height(1).target(1, 10000), (1, 1));
        assert_eq!(
            Resize::Exact {
                width: 7,
                height: 9
            }
            .target(100, 100),
            (7, 9)
        );
    }

    #[test]
    fn keys_name_the_operations() {
        assert_eq!(
            ops("0x0:400x400/250x250").unwrap().key(),
            "crop-0-0-400-400_fit-250-250"
        );
        assert_eq!(ops("x300/a.png").unwrap().key(), "height-300");
        assert_eq!(ops("500x300!").unwrap().key(), "exact-500-300");
    }
}
