//! What an image costs on each OpenAI model. The host reads every image priced as GPT-4o prices
//! it (85 + 170 per 512-pixel tile, [`ImagePricing::OpenAiTiles`]); OpenAI's "Images and vision"
//! guide ("Calculating costs") prices the other models differently, by the same tiles at
//! another rate or by 32-pixel patches times a multiplier. This module swaps the one for the
//! other.

use ctxbed_harness::image::{Image, ImagePricing, image_tokens};
use ctxbed_harness::message::ContentPart;
use ctxbed_harness::model::ModelRequest;

/// How one model prices an image at `detail` `high` or `auto`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pricing {
    /// A base and a price per 512-pixel tile, after the image is scaled as GPT-4o scales it.
    Tiles { base: u64, tile: u64 },
    /// The 32-pixel patches that cover the image (at most 1,536, the image scaled down to fit),
    /// times a multiplier.
    Patches { multiplier: f64 },
}

/// GPT-4o's rate, which the host priced every image at.
const GPT_4O: Pricing = Pricing::Tiles {
    base: 85,
    tile: 170,
};

/// The pricing of `model` (a lower-case name), from OpenAI's vision guide, but where noted.
fn pricing(model: &str) -> Pricing {
    let starts = |prefix: &str| model.starts_with(prefix);
    let patches = |multiplier| Pricing::Patches { multiplier };
    if starts("gpt-4o-mini") {
        Pricing::Tiles {
            base: 2_833,
            tile: 5_667,
        }
    } else if starts("gpt-4.1-mini") {
        patches(1.62)
    } else if starts("gpt-4.1-nano") || starts("gpt-5-nano") {
        patches(2.46)
    } else if starts("o4-mini") {
        patches(1.72)
    } else if starts("gpt-5-mini") {
        // Fitted on the calibration corpus: five Chat Completions requests with one image
        // each (two sizes) are counted within 1 % at 1.2 tokens a patch; the guide's 1.62 is
        // a third over on all five.
        patches(1.2)
    } else if starts("o1") || starts("o3") {
        Pricing::Tiles {
            base: 75,
            tile: 150,
        }
    } else if model == "gpt-5" || starts("gpt-5-") {
        Pricing::Tiles {
            base: 70,
            tile: 140,
        }
    } else {
        GPT_4O
    }
}

/// What `pricing` charges for `image`.
fn price(pricing: Pricing, image: &Image) -> u64 {
    match pricing {
        Pricing::Tiles { base, tile } => {
            let gpt_4o = image_tokens(ImagePricing::OpenAiTiles, image.width, image.height);
            base + tile * (gpt_4o - 85) / 170
        }
        Pricing::Patches { multiplier } => {
            let patches = patches(u64::from(image.width), u64::from(image.height));
            (patches as f64 * multiplier).ceil() as u64
        }
    }
}

/// The 32-pixel patches that cover a `width` × `height` image, scaled down (in proportion, then
/// to whole patches) when more than 1,536 would.
fn patches(width: u64, height: u64) -> u64 {
    const PATCH: u64 = 32;
    const PATCHES_MAX: u64 = 1_536;
    let (width, height) = (width.max(1), height.max(1));
    let whole = width.div_ceil(PATCH) * height.div_ceil(PATCH);
    if whole <= PATCHES_MAX {
        return whole;
    }
    let (w, h) = (width as f64, height as f64);
    let mut shrink = ((PATCH * PATCH * PATCHES_MAX) as f64 / (w * h)).sqrt();
    let (across, down) = (w * shrink / PATCH as f64, h * shrink / PATCH as f64);
    shrink *= (across.floor() / across).min(down.floor() / down);
    let cover = |side: f64| ((side * shrink) / PATCH as f64).ceil() as u64;
    (cover(w) * cover(h)).min(PATCHES_MAX)
}

/// What `model` counts for the request's images beyond what the host counted (GPT-4o's
/// price): images at `detail: "low"` (85 whatever the size) are left as they are.
pub(super) fn correction(model: &str, request: &ModelRequest) -> i64 {
    let pricing = pricing(&model.to_ascii_lowercase());
    if pricing == GPT_4O {
        return 0;
    }
    let images = request.messages.iter().flat_map(|message| &message.parts);
    images
        .filter_map(|part| match part {
            ContentPart::Image(image) => Some(image),
            _ => None,
        })
        .filter(|image| {
            image.tokens == image_tokens(ImagePricing::OpenAiTiles, image.width, image.height)
        })
        .map(|image| price(pricing, image) as i64 - image.tokens as i64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_cover_the_image_and_stop_at_the_cap() {
        assert_eq!(patches(400, 301), 13 * 10);
        assert_eq!(patches(1024, 1024), 1024);
        // The guide's example: 1800 x 2400 is scaled to 1,452 patches.
        assert_eq!(patches(1800, 2400), 1452);
    }

    #[test]
    fn each_model_prices_at_its_own_rate() {
        let image = |width, height| Image {
            media_type: "image/png".into(),
            data: String::new(),
            width,
            height,
            tokens: image_tokens(ImagePricing::OpenAiTiles, width, height),
        };
        assert_eq!(
            price(pricing("gpt-4o-mini"), &image(512, 512)),
            2_833 + 5_667
        );
        assert_eq!(price(pricing("gpt-4.1-nano"), &image(540, 360)), 502);
        assert_eq!(price(pricing("gpt-5"), &image(1024, 1024)), 70 + 140 * 4);
        assert_eq!(price(pricing("gpt-4o"), &image(1024, 1024)), 765);
    }
}
