//! Whether an image file can be read whole, as a provider's decoder reads it: the header alone
//! (all [`ctxbed_harness::image::read_header`] looks at) says nothing of a file cut short or
//! damaged after it, which every provider refuses.
//!
//! - PNG: the chunks follow one another within the file, IHDR first with a known colour type
//!   and bit depth, the CRC of every critical chunk (IHDR, PLTE, IDAT, IEND) matches, IEND is
//!   there, and the IDAT stream inflates to at least the bytes its rows need.
//! - JPEG: the marker segments walk from SOI through a frame header and each scan's
//!   entropy-coded data to EOI.
//! - GIF: the screen descriptor, colour tables, extensions and at least one image whose data
//!   sub-blocks end (the trailer may be missing, as browsers and Pillow accept).
//! - WebP: the RIFF size is within the file, its chunks fit it, and a `VP8 ` key frame (start
//!   code) or a `VP8L` signature is there.
//!
//! Bytes after the end of the image (after IEND, EOI, the trailer or the RIFF size) are
//! ignored, as decoders ignore them. A side of 0 pixels, or more pixels than Pillow opens
//! (its decompression-bomb limit), is unreadable too.

use std::io::Read as _;

use base64::Engine as _;

/// The most pixels an image may have before Pillow refuses to open it
/// (`2 * Image.MAX_IMAGE_PIXELS`, its `DecompressionBombError`); no provider documents a
/// figure of its own, so this one bounds how much a check may inflate.
pub const PIXELS_MAX: u64 = 178_956_970;

/// Why an image file cannot be read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error("the data is not base64")]
    NotBase64,
    #[error("the image has a side of 0 pixels")]
    ZeroSide,
    #[error("the image has more than {PIXELS_MAX} pixels")]
    TooManyPixels,
    #[error("the file ends before the image does")]
    Truncated,
    #[error("a chunk's CRC does not match its data")]
    BadCrc,
    #[error("the file's structure is not its format's")]
    Malformed,
    #[error("the image data does not decompress to the size its header gives")]
    ShortData,
}

/// Checks that the file `data` (standard base64) is a whole, readable image.
///
/// # Errors
/// Why it is not.
pub fn check_base64(data: &str) -> Result<(), Unreadable> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| Unreadable::NotBase64)?;
    check(&bytes)
}

/// Checks that `bytes` are a whole, readable PNG, JPEG, GIF or WebP file.
///
/// # Errors
/// Why they are not.
pub fn check(bytes: &[u8]) -> Result<(), Unreadable> {
    let (_, width, height) =
        ctxbed_harness::image::read_header(bytes).ok_or(Unreadable::Malformed)?;
    if width == 0 || height == 0 {
        return Err(Unreadable::ZeroSide);
    }
    if u64::from(width) * u64::from(height) > PIXELS_MAX {
        return Err(Unreadable::TooManyPixels);
    }
    if bytes.starts_with(b"\x89PNG") {
        png(bytes)
    } else if bytes.starts_with(&[0xff, 0xd8]) {
        jpeg(bytes)
    } else if bytes.starts_with(b"GIF") {
        gif(bytes)
    } else {
        webp(bytes)
    }
}

fn be32(bytes: &[u8], at: usize) -> Result<u32, Unreadable> {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or(Unreadable::Truncated)
}

fn byte(bytes: &[u8], at: usize) -> Result<u8, Unreadable> {
    bytes.get(at).copied().ok_or(Unreadable::Truncated)
}

/// A PNG's chunks, their CRCs and its image data, to IEND.
fn png(bytes: &[u8]) -> Result<(), Unreadable> {
    let mut at = 8;
    let mut header: Option<&[u8]> = None;
    let mut data = Vec::new();
    loop {
        let length = be32(bytes, at)? as usize;
        let end = (at + 12).checked_add(length).ok_or(Unreadable::Truncated)?;
        let chunk = bytes.get(at + 4..end).ok_or(Unreadable::Truncated)?;
        let (kind, body) = chunk.split_at(4);
        let body = &body[..length];
        let critical = kind.first().is_some_and(u8::is_ascii_uppercase);
        if critical && crc32fast::hash(&chunk[..4 + length]) != be32(bytes, end - 4)? {
            return Err(Unreadable::BadCrc);
        }
        match (kind, header) {
            (b"IHDR", None) => header = Some(body),
            (_, None) => return Err(Unreadable::Malformed),
            (b"IDAT", Some(_)) => data.extend_from_slice(body),
            (b"IEND", Some(header)) => return png_rows(header, &data),
            _ => {}
        }
        at = end;
    }
}

/// The IDAT stream inflates to at least the filtered rows IHDR needs.
fn png_rows(header: &[u8], data: &[u8]) -> Result<(), Unreadable> {
    if header.len() != 13 || data.is_empty() {
        return Err(Unreadable::Malformed);
    }
    let width = u64::from(be32(header, 0)?);
    let height = u64::from(be32(header, 4)?);
    let (depth, colour, interlace) = (header[8], header[9], header[12]);
    let channels = match (colour, depth) {
        (0, 1 | 2 | 4 | 8 | 16) => 1,
        (3, 1 | 2 | 4 | 8) => 1,
        (2, 8 | 16) => 3,
        (4, 8 | 16) => 2,
        (6, 8 | 16) => 4,
        _ => return Err(Unreadable::Malformed),
    };
    if header[10] != 0 || header[11] != 0 || interlace > 1 {
        return Err(Unreadable::Malformed);
    }
    let bits = u64::from(depth) * channels;
    let rows = |w: u64, h: u64| {
        if w == 0 || h == 0 {
            0
        } else {
            h * (1 + (w * bits).div_ceil(8))
        }
    };
    let needed = if interlace == 0 {
        rows(width, height)
    } else {
        // Adam7: each pass's (x start, y start, x step, y step).
        [
            (0, 0, 8, 8),
            (4, 0, 8, 8),
            (0, 4, 4, 8),
            (2, 0, 4, 4),
            (0, 2, 2, 4),
            (1, 0, 2, 2),
            (0, 1, 1, 2),
        ]
        .iter()
        .map(|&(x, y, dx, dy)| rows((width + dx - 1 - x) / dx, (height + dy - 1 - y) / dy))
        .sum()
    };
    let mut inflated = flate2::read::ZlibDecoder::new(data).take(needed);
    let mut buffer = [0u8; 16 * 1024];
    let mut got = 0u64;
    loop {
        match inflated.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => got += n as u64,
            Err(_) => return Err(Unreadable::ShortData),
        }
    }
    if got < needed {
        return Err(Unreadable::ShortData);
    }
    Ok(())
}

/// A JPEG's marker segments from SOI, through a frame and its scans, to EOI.
fn jpeg(bytes: &[u8]) -> Result<(), Unreadable> {
    let mut at = 2;
    let mut frame = false;
    loop {
        if byte(bytes, at)? != 0xff {
            return Err(Unreadable::Malformed);
        }
        while byte(bytes, at + 1)? == 0xff {
            at += 1;
        }
        let marker = byte(bytes, at + 1)?;
        match marker {
            0xd9 if frame => return Ok(()),
            0xd9 | 0xd8 | 0x00 => return Err(Unreadable::Malformed),
            0x01 | 0xd0..=0xd7 => {
                at += 2;
                continue;
            }
            _ => {}
        }
        let length = usize::from(u16::from_be_bytes([
            byte(bytes, at + 2)?,
            byte(bytes, at + 3)?,
        ]));
        if length < 2 {
            return Err(Unreadable::Malformed);
        }
        let next = at + 2 + length;
        if next > bytes.len() {
            return Err(Unreadable::Truncated);
        }
        if (0xc0..=0xcf).contains(&marker) && ![0xc4, 0xc8, 0xcc].contains(&marker) {
            frame = true;
        }
        at = if marker == 0xda {
            if !frame {
                return Err(Unreadable::Malformed);
            }
            scan_end(bytes, next)?
        } else {
            next
        };
    }
}

/// Where a scan's entropy-coded data ends: the first marker that is not a stuffed zero or a
/// restart.
fn scan_end(bytes: &[u8], mut at: usize) -> Result<usize, Unreadable> {
    loop {
        let found = bytes
            .get(at..)
            .and_then(|rest| rest.iter().position(|&b| b == 0xff))
            .ok_or(Unreadable::Truncated)?;
        at += found;
        match byte(bytes, at + 1)? {
            0x00 | 0xd0..=0xd7 | 0xff => at += 1,
            _ => return Ok(at),
        }
    }
}

/// A GIF's blocks, to its trailer or to the end of a whole image.
fn gif(bytes: &[u8]) -> Result<(), Unreadable> {
    let table = |packed: u8| {
        if packed & 0x80 != 0 {
            3usize << ((packed & 7) + 1)
        } else {
            0
        }
    };
    let mut at = 13 + table(byte(bytes, 10)?);
    let mut images = 0;
    loop {
        let Some(&block) = bytes.get(at) else {
            // No trailer: taken when an image came whole before the end.
            return if images > 0 {
                Ok(())
            } else {
                Err(Unreadable::Truncated)
            };
        };
        at = match block {
            0x3b if images > 0 => return Ok(()),
            0x2c => {
                let packed = byte(bytes, at + 9)?;
                images += 1;
                // The LZW minimum code size, then the data's sub-blocks.
                let start = at + 10 + table(packed);
                byte(bytes, start)?;
                sub_blocks(bytes, start + 1)?
            }
            0x21 => sub_blocks(bytes, at + 2)?,
            _ => return Err(Unreadable::Malformed),
        };
    }
}

/// The end of a run of GIF sub-blocks (each a length byte and its bytes, ended by a 0).
fn sub_blocks(bytes: &[u8], mut at: usize) -> Result<usize, Unreadable> {
    loop {
        let length = usize::from(byte(bytes, at)?);
        at += 1;
        if length == 0 {
            return Ok(at);
        }
        at += length;
        if at > bytes.len() {
            return Err(Unreadable::Truncated);
        }
    }
}

/// A WebP's RIFF container and its chunks, with a VP8 key frame or a VP8L signature.
fn webp(bytes: &[u8]) -> Result<(), Unreadable> {
    let le32 = |at: usize| -> Result<usize, Unreadable> {
        let b = bytes.get(at..at + 4).ok_or(Unreadable::Truncated)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let end = le32(4)?.checked_add(8).ok_or(Unreadable::Malformed)?;
    if end > bytes.len() {
        return Err(Unreadable::Truncated);
    }
    let mut at = 12;
    let mut image = false;
    while at < end {
        let kind = bytes.get(at..at + 4).ok_or(Unreadable::Truncated)?;
        let size = le32(at + 4)?;
        let body = bytes
            .get(at + 8..at + 8 + size)
            .filter(|_| at + 8 + size <= end)
            .ok_or(Unreadable::Truncated)?;
        match kind {
            b"VP8 " if body.len() >= 10 && body[0] & 1 == 0 && body[3..6] == [0x9d, 0x01, 0x2a] => {
                image = true;
            }
            b"VP8L" if body.len() >= 5 && body[0] == 0x2f => image = true,
            b"VP8 " | b"VP8L" => return Err(Unreadable::Malformed),
            _ => {}
        }
        at += 8 + size + (size & 1);
    }
    if image {
        Ok(())
    } else {
        Err(Unreadable::Malformed)
    }
}

#[cfg(test)]
/// A whole PNG (for tests) of `width` × `height` grey pixels.
pub(crate) fn png_file(width: u32, height: u32) -> Vec<u8> {
    use std::io::Write as _;
    let row = 1 + width as usize;
    let pixels = vec![0u8; row * height as usize];
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = encoder.write_all(&pixels);
    let data = encoder.finish().unwrap_or_default();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = width.to_be_bytes().to_vec();
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 0, 0, 0, 0]);
    for (kind, body) in [
        (&b"IHDR"[..], &header[..]),
        (b"IDAT", &data),
        (b"IEND", &[]),
    ] {
        png.extend_from_slice(&(body.len() as u32).to_be_bytes());
        let start = png.len();
        png.extend_from_slice(kind);
        png.extend_from_slice(body);
        let crc = crc32fast::hash(&png[start..]);
        png.extend_from_slice(&crc.to_be_bytes());
    }
    png
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_png_is_readable_and_a_damaged_one_is_not() {
        let whole = png_file(40, 30);
        assert_eq!(check(&whole), Ok(()));
        // Bytes after IEND are ignored.
        let mut trailing = whole.clone();
        trailing.extend_from_slice(b"junk");
        assert_eq!(check(&trailing), Ok(()));
        assert_eq!(
            check(&whole[..whole.len() - 12]),
            Err(Unreadable::Truncated)
        );
        assert_eq!(check(&whole[..40]), Err(Unreadable::Truncated));
        let mut flipped = whole.clone();
        let idat = whole.len() - 12 - 8;
        flipped[idat] ^= 0xff;
        assert_eq!(check(&flipped), Err(Unreadable::BadCrc));
        assert_eq!(check(&png_file(0, 30)), Err(Unreadable::ZeroSide));
        // A header that claims more rows than the data holds.
        let mut tall = png_file(40, 30);
        tall[20..24].copy_from_slice(&300u32.to_be_bytes());
        let crc = crc32fast::hash(&tall[12..29]);
        tall[29..33].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(check(&tall), Err(Unreadable::ShortData));
    }

    #[test]
    fn jpeg_gif_and_webp_are_walked_to_their_end() {
        // SOI, SOF0 (8 x 8, one component), SOS, one byte of scan data, EOI.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xc0, 0, 11, 8, 0, 8, 0, 8, 1, 1, 0x11, 0];
        jpeg.extend_from_slice(&[0xff, 0xda, 0, 8, 1, 1, 0, 0, 63, 0, 0x12, 0xff, 0x00]);
        jpeg.extend_from_slice(&[0xff, 0xd9]);
        assert_eq!(check(&jpeg), Ok(()));
        assert_eq!(check(&jpeg[..jpeg.len() - 2]), Err(Unreadable::Truncated));
        // A 1 x 1 GIF: header, screen, image descriptor, code size, one sub-block, trailer.
        let mut gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00".to_vec();
        gif.extend_from_slice(&[0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x4c, 0x01, 0, 0x3b]);
        assert_eq!(check(&gif), Ok(()));
        assert_eq!(check(&gif[..gif.len() - 1]), Ok(()));
        assert_eq!(check(&gif[..gif.len() - 4]), Err(Unreadable::Truncated));
        // A WebP whose VP8L chunk is cut.
        let mut webp = b"RIFF\x16\x00\x00\x00WEBPVP8L\x0a\x00\x00\x00\x2f\x00\x00\x00\x00".to_vec();
        webp.extend_from_slice(&[0; 5]);
        assert_eq!(check(&webp), Ok(()));
        assert_eq!(check(&webp[..webp.len() - 3]), Err(Unreadable::Truncated));
    }
}
