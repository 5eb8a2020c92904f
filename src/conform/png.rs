//! The images a wire scenario attaches: deterministic PNG files of a given size that look, to
//! a compressor, like a screenshot of text (white background, lines of dark and light pixels
//! from a seeded generator), so their files are as large as a real screenshot's rather than a
//! few hundred bytes of one colour.
//!
//! The same (width, height, seed) always gives the same bytes; each step's image gets its own
//! seed, so no two steps attach the same file.

use std::io::Write as _;

use base64::Engine as _;

/// The pixel rows of one line of "text" and the blank rows after it.
const LINE_ROWS: u32 = 12;
const GAP_ROWS: u32 = 6;
/// The blank margin left and right, in pixels.
const MARGIN: u32 = 16;

/// A grayscale PNG file of `width` × `height` pixels (both at least 1), drawn from `seed`.
pub fn screenshot(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let (width, height) = (width.max(1), height.max(1));
    let mut pixels = Vec::with_capacity((width as usize + 1) * height as usize);
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut line_end = 0;
    for y in 0..height {
        let row_in_line = y % (LINE_ROWS + GAP_ROWS);
        if row_in_line == 0 {
            // Each line of text stops somewhere in the right half, as lines of prose do.
            let span = u64::from(width.saturating_sub(2 * MARGIN) / 2).max(1);
            line_end =
                MARGIN + width.saturating_sub(2 * MARGIN) / 2 + (next(&mut state) % span) as u32;
        }
        pixels.push(0); // filter: none
        for x in 0..width {
            let inked = row_in_line < LINE_ROWS && (MARGIN..line_end).contains(&x);
            let value = if inked && next(&mut state) & 1 == 1 {
                32
            } else {
                255
            };
            pixels.push(value);
        }
    }
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = Vec::with_capacity(13);
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 0 (grayscale), deflate, adaptive filtering, no interlace.
    header.extend_from_slice(&[8, 0, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &header);
    chunk(&mut png, b"IDAT", &deflate(&pixels));
    chunk(&mut png, b"IEND", &[]);
    png
}

/// [`screenshot`] as standard base64, as the peer protocol's `images` carry it.
pub fn screenshot_base64(width: u32, height: u32, seed: u64) -> String {
    base64::engine::general_purpose::STANDARD.encode(screenshot(width, height, seed))
}

/// A step's `images`, as its protocol line carries them: each a screenshot of its size, seeded
/// by the step's number and the image's place.
pub fn step_images(
    step: usize,
    images: &[crate::conform::file::WireImage],
) -> Vec<serde_json::Value> {
    images
        .iter()
        .enumerate()
        .map(|(index, image)| {
            let seed = (step as u64) << 16 | index as u64;
            serde_json::json!({
                "media_type": "image/png",
                "data": screenshot_base64(image.width, image.height, seed),
            })
        })
        .collect()
}

/// One chunk: length, type, data, and the CRC of type and data.
fn chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    png.extend_from_slice(&(data.len() as u32).to_be_bytes());
    png.extend_from_slice(kind);
    png.extend_from_slice(data);
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    png.extend_from_slice(&crc.finalize().to_be_bytes());
}

/// The zlib stream of `bytes` (writing to a vector cannot fail).
fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    let written = encoder.write_all(bytes);
    debug_assert!(written.is_ok(), "writing to a vector");
    encoder.finish().unwrap_or_default()
}

/// splitmix64: the next number of a seeded sequence.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn a_screenshot_is_a_png_of_its_size_that_decodes_to_its_pixels() {
        let png = screenshot(300, 200, 7);
        assert_eq!(
            ctxbed_harness::image::read_header(&png),
            Some(("image/png", 300, 200))
        );
        // The IDAT chunk inflates to one filter byte and 300 pixels per row.
        let length = u32::from_be_bytes(png[33..37].try_into().unwrap()) as usize;
        assert_eq!(&png[37..41], b"IDAT");
        let mut rows = Vec::new();
        flate2::read::ZlibDecoder::new(&png[41..41 + length])
            .read_to_end(&mut rows)
            .unwrap();
        assert_eq!(rows.len(), 301 * 200);
        assert!(png.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82]));
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes_and_another_seed_other_bytes() {
        assert_eq!(screenshot(64, 48, 1), screenshot(64, 48, 1));
        assert_ne!(screenshot(64, 48, 1), screenshot(64, 48, 2));
        // Sized as a screenshot of text is: tens of kilobytes, not a few hundred bytes.
        let size = screenshot(1024, 768, 1).len();
        assert!((20_000..200_000).contains(&size), "{size} bytes");
    }
}
