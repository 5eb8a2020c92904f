//! Images a user attaches to a message: the file (base64, as every provider takes it inline),
//! its dimensions read from the file's own header, and what it costs in the window as the
//! provider counts it.
//!
//! Providers do not count an image by its bytes but by its pixels, each by its own rule:
//! - **OpenAI** (GPT-4o family, Chat Completions and Responses): at `detail: "low"` 85 tokens;
//!   otherwise the image is scaled to fit a 2048 × 2048 square, then down so its shorter side
//!   is at most 768 pixels, and costs 85 tokens plus 170 for each 512-pixel tile it covers
//!   (a 1024 × 1024 image: 765; 2048 × 4096: 1,105).
//! - **Anthropic**: the image is scaled down until its long edge is at most 1,568 pixels and
//!   it is at most about 1,600 tokens, then costs `width × height / 750` tokens, rounded up
//!   (1000 × 1000: 1,334; 1092 × 1092: 1,590).
//!
//! A harness that counts an image as the characters of its base64 text overcounts a
//! compressible screenshot a hundredfold, and one that counts nothing overflows: [`Image`]
//! carries the provider's figure so the estimator never guesses.
//!
//! ```
//! use ctxbed_harness::image::{image_tokens, ImagePricing};
//! assert_eq!(image_tokens(ImagePricing::OpenAiTiles, 1024, 1024), 765);
//! assert_eq!(image_tokens(ImagePricing::OpenAiTiles, 2048, 4096), 1105);
//! assert_eq!(image_tokens(ImagePricing::OpenAiLow, 4000, 3000), 85);
//! assert_eq!(image_tokens(ImagePricing::AnthropicArea, 1000, 1000), 1334);
//! assert_eq!(image_tokens(ImagePricing::AnthropicArea, 200, 200), 54);
//! ```

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The media types every provider takes inline.
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The largest image file read, in bytes (Anthropic takes 5 MB per image, OpenAI 20 MB per
/// request: this bound is above both, so only a file no provider takes is refused for size).
pub const IMAGE_BYTES_MAX: usize = 20 * 1024 * 1024;

/// How a provider prices an image in its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImagePricing {
    /// OpenAI at `detail` `high` or `auto` (the API's default): 85 + 170 per 512-pixel tile.
    OpenAiTiles,
    /// OpenAI at `detail: "low"`: 85 tokens, whatever the size.
    OpenAiLow,
    /// Anthropic: the pixel area over 750, after scaling down to its limits.
    AnthropicArea,
}

/// An image attached to a user message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Image {
    /// One of [`IMAGE_MEDIA_TYPES`].
    pub media_type: String,
    /// The whole file, standard base64.
    pub data: String,
    /// Pixels across, from the file's header.
    pub width: u32,
    /// Pixels down, from the file's header.
    pub height: u32,
    /// What the image costs in the window, as the provider it is sent to counts it.
    pub tokens: u64,
}

/// Why an image could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// The data is not standard base64.
    #[error("the image data is not valid base64")]
    NotBase64,
    /// The decoded file is larger than [`IMAGE_BYTES_MAX`].
    #[error("the image is {0} bytes, over the {IMAGE_BYTES_MAX}-byte limit")]
    TooLarge(usize),
    /// The file is not a PNG, JPEG, GIF or WebP image, or its header is cut short.
    #[error("the data is not a PNG, JPEG, GIF or WebP image whose size can be read")]
    UnknownFormat,
    /// The file's format is not the media type it was given as.
    #[error("the image is {found}, but was given as {given}")]
    MediaTypeMismatch {
        /// The media type the file was given as.
        given: String,
        /// The media type its bytes are.
        found: &'static str,
    },
}

impl Image {
    /// Reads an image from its base64 text, checks that its bytes are the media type given,
    /// and prices it for the provider it will be sent to.
    ///
    /// # Errors
    /// Data that is not base64, too large, not an image whose size can be read, or of another
    /// media type than given.
    pub fn from_base64(
        media_type: &str,
        data: &str,
        pricing: ImagePricing,
    ) -> Result<Self, ImageError> {
        if data.len() / 4 * 3 > IMAGE_BYTES_MAX + 3 {
            return Err(ImageError::TooLarge(data.len() / 4 * 3));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|_| ImageError::NotBase64)?;
        if bytes.len() > IMAGE_BYTES_MAX {
            return Err(ImageError::TooLarge(bytes.len()));
        }
        let (found, width, height) = read_header(&bytes).ok_or(ImageError::UnknownFormat)?;
        if found != media_type {
            return Err(ImageError::MediaTypeMismatch {
                given: media_type.to_string(),
                found,
            });
        }
        Ok(Image {
            media_type: media_type.to_string(),
            data: data.trim().to_string(),
            width,
            height,
            tokens: image_tokens(pricing, width, height),
        })
    }

    /// The image as a `data:` URL, as OpenAI's APIs take it inline.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }

    /// The size of the file, in bytes (from its base64 length).
    pub fn size_bytes(&self) -> u64 {
        let padding = self.data.bytes().rev().take_while(|&b| b == b'=').count();
        (self.data.len() / 4 * 3).saturating_sub(padding) as u64
    }
}

/// What an image of `width` × `height` pixels costs in the window under `pricing`.
pub fn image_tokens(pricing: ImagePricing, width: u32, height: u32) -> u64 {
    let (width, height) = (u64::from(width.max(1)), u64::from(height.max(1)));
    match pricing {
        ImagePricing::OpenAiLow => 85,
        ImagePricing::OpenAiTiles => {
            let (width, height) = scale_within(width, height, 2048, 2048);
            let shorter = width.min(height);
            let (width, height) = if shorter > 768 {
                (width * 768 / shorter, height * 768 / shorter)
            } else {
                (width, height)
            };
            85 + 170 * width.div_ceil(512) * height.div_ceil(512)
        }
        ImagePricing::AnthropicArea => {
            let (mut width, mut height) = scale_within(width, height, 1568, 1568);
            // At most about 1,600 tokens: 1,200,000 pixels, kept in proportion.
            const AREA_MAX: u64 = 1_600 * 750;
            if width * height > AREA_MAX {
                let ratio = (AREA_MAX as f64 / (width * height) as f64).sqrt();
                width = ((width as f64 * ratio).floor() as u64).max(1);
                height = ((height as f64 * ratio).floor() as u64).max(1);
            }
            (width * height).div_ceil(750)
        }
    }
}

/// `width` × `height` scaled down (never up), in proportion, to fit `max_width` × `max_height`.
fn scale_within(width: u64, height: u64, max_width: u64, max_height: u64) -> (u64, u64) {
    if width <= max_width && height <= max_height {
        return (width, height);
    }
    if width * max_height >= height * max_width {
        (max_width, (height * max_width / width).max(1))
    } else {
        ((width * max_height / height).max(1), max_height)
    }
}

/// The media type and pixel size of an image file, from its header: PNG (IHDR), GIF (logical
/// screen), WebP (VP8, VP8L or VP8X) or JPEG (the first start-of-frame marker).
pub fn read_header(bytes: &[u8]) -> Option<(&'static str, u32, u32)> {
    let be32 = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let le16 = |at: usize| {
        Some(u32::from(u16::from_le_bytes(
            bytes.get(at..at + 2)?.try_into().ok()?,
        )))
    };
    let le24 = |at: usize| {
        let b = bytes.get(at..at + 3)?;
        Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
    };
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.get(12..16) == Some(b"IHDR") {
        return Some(("image/png", be32(16)?, be32(20)?));
    }
    if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        return Some(("image/gif", le16(6)?, le16(8)?));
    }
    if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        return match bytes.get(12..16)? {
            b"VP8 " => Some(("image/webp", le16(26)? & 0x3fff, le16(28)? & 0x3fff)),
            b"VP8L" => {
                let bits = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
                Some((
                    "image/webp",
                    (bits & 0x3fff) + 1,
                    ((bits >> 14) & 0x3fff) + 1,
                ))
            }
            b"VP8X" => Some(("image/webp", le24(24)? + 1, le24(27)? + 1)),
            _ => None,
        };
    }
    if bytes.starts_with(&[0xff, 0xd8]) {
        return jpeg_size(bytes).map(|(width, height)| ("image/jpeg", width, height));
    }
    None
}

/// A JPEG's size from its first start-of-frame marker, walking the marker segments.
fn jpeg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        while bytes.get(at) == Some(&0xff) && bytes.get(at + 1) == Some(&0xff) {
            at += 1;
        }
        if *bytes.get(at)? != 0xff {
            return None;
        }
        let marker = *bytes.get(at + 1)?;
        let length = usize::from(u16::from_be_bytes(
            bytes.get(at + 2..at + 4)?.try_into().ok()?,
        ));
        // Start of frame: every SOFn but DHT (C4), JPG (C8) and DAC (CC).
        if (0xc0..=0xcf).contains(&marker) && ![0xc4, 0xc8, 0xcc].contains(&marker) {
            let height = u16::from_be_bytes(bytes.get(at + 5..at + 7)?.try_into().ok()?);
            let width = u16::from_be_bytes(bytes.get(at + 7..at + 9)?.try_into().ok()?);
            return Some((u32::from(width), u32::from(height)));
        }
        if length < 2 {
            return None;
        }
        at += 2 + length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_tiles_follow_the_documented_examples() {
        assert_eq!(image_tokens(ImagePricing::OpenAiTiles, 1024, 1024), 765);
        assert_eq!(image_tokens(ImagePricing::OpenAiTiles, 2048, 4096), 1105);
        // Small images are not scaled up: one tile.
        assert_eq!(image_tokens(ImagePricing::OpenAiTiles, 300, 200), 255);
        assert_eq!(image_tokens(ImagePricing::OpenAiTiles, 512, 512), 255);
        assert_eq!(image_tokens(ImagePricing::OpenAiTiles, 513, 512), 425);
        // 1280 x 800: shorter side to 768 gives 1228 x 768, 3 x 2 tiles.
        assert_eq!(
            image_tokens(ImagePricing::OpenAiTiles, 1280, 800),
            85 + 170 * 6
        );
        assert_eq!(image_tokens(ImagePricing::OpenAiLow, 1280, 800), 85);
    }

    #[test]
    fn anthropic_area_follows_the_documented_examples() {
        assert_eq!(image_tokens(ImagePricing::AnthropicArea, 200, 200), 54);
        assert_eq!(image_tokens(ImagePricing::AnthropicArea, 1000, 1000), 1334);
        assert_eq!(image_tokens(ImagePricing::AnthropicArea, 1092, 1092), 1590);
        // Larger images are scaled down to about 1,600 tokens, never above.
        for (width, height) in [(4000, 3000), (1568, 1568), (8000, 100), (100, 8000)] {
            let tokens = image_tokens(ImagePricing::AnthropicArea, width, height);
            assert!(tokens <= 1_600, "{width}x{height}: {tokens}");
        }
        // The long edge is held to 1,568 pixels first: 8000 x 100 becomes 1568 x 19.
        assert_eq!(
            image_tokens(ImagePricing::AnthropicArea, 8000, 100),
            (1568 * 19u64).div_ceil(750)
        );
    }

    #[test]
    fn headers_give_each_format_and_size() {
        let png = [
            &b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR"[..],
            &1280u32.to_be_bytes(),
            &800u32.to_be_bytes(),
        ]
        .concat();
        assert_eq!(read_header(&png), Some(("image/png", 1280, 800)));
        let gif = [&b"GIF89a"[..], &640u16.to_le_bytes(), &480u16.to_le_bytes()].concat();
        assert_eq!(read_header(&gif), Some(("image/gif", 640, 480)));
        let jpeg = [
            &[0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00][..],
            &[0xff, 0xc0, 0x00, 0x11, 0x08],
            &600u16.to_be_bytes(),
            &900u16.to_be_bytes(),
        ]
        .concat();
        assert_eq!(read_header(&jpeg), Some(("image/jpeg", 900, 600)));
        let mut webp = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        webp.extend_from_slice(&[0x7f, 0x02, 0x00, 0xdf, 0x01, 0x00]);
        assert_eq!(read_header(&webp), Some(("image/webp", 640, 480)));
        assert_eq!(read_header(b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(read_header(b"plain text"), None);
        assert_eq!(read_header(&[0xff, 0xd8, 0xff]), None);
    }

    #[test]
    fn an_image_is_read_from_base64_and_checked_against_its_media_type() {
        let png = [
            &b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR"[..],
            &1024u32.to_be_bytes(),
            &1024u32.to_be_bytes(),
        ]
        .concat();
        let data = base64::engine::general_purpose::STANDARD.encode(&png);
        let image = Image::from_base64("image/png", &data, ImagePricing::OpenAiTiles).unwrap();
        assert_eq!((image.width, image.height, image.tokens), (1024, 1024, 765));
        assert_eq!(image.size_bytes(), png.len() as u64);
        assert!(
            image
                .data_url()
                .starts_with("data:image/png;base64,iVBORw0KGgo")
        );
        assert_eq!(
            Image::from_base64("image/jpeg", &data, ImagePricing::OpenAiTiles),
            Err(ImageError::MediaTypeMismatch {
                given: "image/jpeg".into(),
                found: "image/png"
            })
        );
        assert_eq!(
            Image::from_base64("image/png", "not base64!", ImagePricing::OpenAiTiles),
            Err(ImageError::NotBase64)
        );
        let text = base64::engine::general_purpose::STANDARD.encode("hello world");
        assert_eq!(
            Image::from_base64("image/png", &text, ImagePricing::OpenAiTiles),
            Err(ImageError::UnknownFormat)
        );
    }
}
