//! Reading what `stagehand play --json` printed. Builds differ in what they
//! report (an older one has no `never_pushed`, no `passes`, no cache), so
//! every field is looked up on its own and a missing one stays `None`.

use super::outcome::Measured;
use super::scenarios::Scenario;
use serde_json::Value;

/// The numbers of one run from its standard output, for `scenario` over
/// footage of `frames` frames (CPU time is the caller's to add).
pub fn measured(stdout: &str, scenario: Scenario, frames: u32) -> Result<Measured, String> {
    let report = first_object(stdout).ok_or("it printed no JSON summary")?;
    let p = report
        .get("playback")
        .ok_or("its JSON has no playback section")?;
    let passes = passes(p);
    let looped = scenario.passes() > 1;
    Ok(Measured {
        adapter: p.get("adapter").and_then(Value::as_str).map(str::to_owned),
        shown: uint(p, &["frames", "shown"]),
        dropped: uint(p, &["frames", "dropped"]),
        never_pushed: uint(p, &["never_pushed"]),
        later_missed: if looped { later_missed(&passes) } else { None },
        upload_p50: float(p, &["upload_latency", "p50"]),
        uploads_later: if scenario == Scenario::Tier {
            uploads_after_first(p, &passes)
        } else {
            None
        },
        held_all: held_all(&report, p, scenario, frames),
        cpu: None,
        server_cpu: None,
    })
}

/// The first JSON object that starts a line: the report. Lines before it
/// (an older build's progress lines) are passed over.
fn first_object(text: &str) -> Option<Value> {
    text.match_indices('{')
        .filter(|&(i, _)| i == 0 || text[..i].ends_with('\n'))
        .find_map(|(i, _)| {
            let mut values = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
            match values.next() {
                Some(Ok(v)) if v.is_object() => Some(v),
                _ => None,
            }
        })
}

fn field<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, key| v.get(key))
}

fn uint(v: &Value, path: &[&str]) -> Option<u64> {
    field(v, path)?.as_u64()
}

fn float(v: &Value, path: &[&str]) -> Option<f64> {
    field(v, path)?.as_f64()
}

/// One pass over the footage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pass {
    frames: u64,
    shown: u64,
    missed: u64,
    /// Uploads for the pass's ticks, where the build counts them.
    uploads: Option<u64>,
}

/// The passes, where the build reports them whole.
fn passes(p: &Value) -> Option<Vec<Pass>> {
    p.get("passes")?
        .as_array()?
        .iter()
        .map(|pass| {
            Some(Pass {
                frames: uint(pass, &["frames"])?,
                shown: uint(pass, &["shown"])?,
                missed: uint(pass, &["missed"])?,
                uploads: uint(pass, &["uploads"]),
            })
        })
        .collect()
}

/// Frames missed on every pass after the first.
fn later_missed(passes: &Option<Vec<Pass>>) -> Option<u64> {
    let passes = passes.as_ref().filter(|p| !p.is_empty())?;
    Some(passes[1..].iter().map(|p| p.missed).sum())
}

/// Uploads made for the passes after the first: exact where the build
/// counts them per pass, else bounds (an older summary counts pushes for
/// the whole run, not per pass). Every frame shown on
/// the first pass was pushed for it (the GPU tier starts empty), and it
/// pushed no more than its frames; every frame shown later and not from
/// the tier was pushed later. So the later pushes are at most `pushed -
/// shown on pass 1`, and at least the larger of `pushed - frames of pass
/// 1` and `shown later - shown from the tier`. When the first pass shows
/// every frame the two bounds meet.
fn uploads_after_first(p: &Value, passes: &Option<Vec<Pass>>) -> Option<(u64, u64)> {
    let passes = passes.as_ref()?;
    // A build that counts uploads per pass (the frame queue's and the GPU
    // tier's) says exactly.
    if passes.len() > 1
        && let Some(later) = passes[1..].iter().map(|p| p.uploads).sum::<Option<u64>>()
    {
        return Some((later, later));
    }
    let pushed = uint(p, &["frames", "pushed"])?;
    let first = passes.first()?;
    let later_shown: u64 = passes[1..].iter().map(|p| p.shown).sum();
    let tier_shown = uint(p, &["gpu_cache", "shown"])?;
    let high = pushed.saturating_sub(first.shown);
    let low = pushed
        .saturating_sub(first.frames)
        .max(later_shown.saturating_sub(tier_shown));
    Some((low.min(high), high))
}

/// Whether the caches the scenario relies on held all `frames`.
fn held_all(report: &Value, p: &Value, scenario: Scenario, frames: u32) -> Option<bool> {
    let cache = cache_held(report, p);
    match scenario {
        Scenario::First | Scenario::Window => None,
        Scenario::Loop => cache,
        Scenario::Preroll => {
            let prerolled = uint(p, &["prerolled_frames"])?;
            Some(cache? && prerolled >= u64::from(frames))
        }
        Scenario::Tier => Some(cache? && tier_fits(p, frames)?),
    }
}

/// Whether the GPU tier's budget holds `frames` textures of the size its
/// resident frames have. (Frames never uploaded are never resident, so
/// counting them would blame the tier for the first pass's misses.)
fn tier_fits(p: &Value, frames: u32) -> Option<bool> {
    let budget = uint(p, &["gpu_cache", "budget"])?;
    let resident = uint(p, &["gpu_cache", "frames"])?;
    let bytes = uint(p, &["gpu_cache", "bytes"])?;
    let per_frame = bytes.checked_div(resident)?;
    Some(per_frame.saturating_mul(u64::from(frames)) <= budget)
}

/// Whether the RAM cache evicted nothing (it evicts only for room).
/// Frames it handed over without keeping are not counted against the
/// fit: in realtime it also stops growing while frames are being skipped,
/// with room to spare, and those later misses are the player's, which the
/// loop rows are there to show.
fn cache_held(report: &Value, p: &Value) -> Option<bool> {
    let cache = p
        .get("cache")
        .filter(|c| c.is_object())
        .or_else(|| report.get("cache"))?;
    Some(uint(cache, &["evicted"])? == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TODAY: &str = r#"tick 1/144: shown 0
{
  "playback": {
    "adapter": "llvmpipe (Gl)",
    "frames": { "pushed": 60, "shown": 140, "dropped": 1, "late": 0, "failed": 0 },
    "never_pushed": 3,
    "prerolled_frames": 2,
    "passes": [
      { "frames": 48, "shown": 46, "missed": 2 },
      { "frames": 48, "shown": 48, "missed": 0 },
      { "frames": 48, "shown": 46, "missed": 2 }
    ],
    "upload_latency": { "p50": 23.5, "p99": 40.0, "max": 41.0 },
    "cache": { "evicted": 0, "passed_through": 0 },
    "gpu_cache": { "budget": 1000, "frames": 47, "bytes": 940, "shown": 80 }
  }
}"#;

    #[test]
    fn todays_summary_gives_every_number() {
        let m = measured(TODAY, Scenario::Tier, 48).unwrap();
        assert_eq!(m.adapter.as_deref(), Some("llvmpipe (Gl)"));
        assert_eq!(
            (m.shown, m.dropped, m.never_pushed),
            (Some(140), Some(1), Some(3))
        );
        assert_eq!(m.later_missed, Some(2));
        assert_eq!(m.upload_p50, Some(23.5));
        // At most 60 - 46 = 14; at least max(60 - 48, 94 - 80) = 14.
        assert_eq!(m.uploads_later, Some((14, 14)));
        assert_eq!(m.held_all, Some(true));
    }

    #[test]
    fn the_bounds_on_later_uploads_part_when_the_first_pass_misses() {
        let p: Value =
            serde_json::from_str(r#"{ "frames": { "pushed": 50 }, "gpu_cache": { "shown": 96 } }"#)
                .unwrap();
        let passes = Some(vec![
            Pass {
                frames: 48,
                shown: 40,
                missed: 8,
                uploads: None,
            },
            Pass {
                frames: 48,
                shown: 48,
                missed: 0,
                uploads: None,
            },
            Pass {
                frames: 48,
                shown: 48,
                missed: 0,
                uploads: None,
            },
        ]);
        assert_eq!(uploads_after_first(&p, &passes), Some((2, 10)));
    }

    #[test]
    fn uploads_counted_per_pass_are_taken_as_they_are() {
        let p: Value = serde_json::from_str(r#"{ "frames": { "pushed": 50 } }"#).unwrap();
        let pass = |uploads| Pass {
            frames: 48,
            shown: 48,
            missed: 0,
            uploads: Some(uploads),
        };
        let passes = Some(vec![pass(48), pass(1), pass(2)]);
        assert_eq!(uploads_after_first(&p, &passes), Some((3, 3)));
    }

    #[test]
    fn an_older_summary_leaves_what_it_lacks_empty() {
        let old = r#"{ "playback": { "frames": { "pushed": 48, "shown": 48, "dropped": 0 },
                       "upload_latency": { "p50": 21.0 } } }"#;
        let m = measured(old, Scenario::Loop, 48).unwrap();
        assert_eq!((m.shown, m.dropped), (Some(48), Some(0)));
        assert_eq!(
            (m.never_pushed, m.later_missed, m.held_all),
            (None, None, None)
        );
    }

    #[test]
    fn output_without_a_summary_is_an_error_not_a_panic() {
        for text in ["", "error: no", "{ not json", "[1, 2]\n", "{\"other\": 1}"] {
            assert!(measured(text, Scenario::First, 48).is_err(), "{text:?}");
        }
    }

    #[test]
    fn frames_handed_over_with_room_to_spare_still_fit() {
        let text = TODAY.replace(r#""passed_through": 0"#, r#""passed_through": 4"#);
        let m = measured(&text, Scenario::Loop, 48).unwrap();
        assert_eq!(m.held_all, Some(true));
    }

    #[test]
    fn evictions_mean_the_footage_did_not_fit() {
        let text = TODAY.replace(r#""evicted": 0"#, r#""evicted": 5"#);
        let m = measured(&text, Scenario::Loop, 48).unwrap();
        assert_eq!(m.held_all, Some(false));
    }

    #[test]
    fn a_tier_fits_when_its_budget_holds_every_frame_at_the_resident_size() {
        // 47 frames of 20 bytes resident; 48 need 960 of the 1000.
        assert_eq!(
            measured(TODAY, Scenario::Tier, 48).unwrap().held_all,
            Some(true)
        );
        let small = TODAY.replace(r#""budget": 1000"#, r#""budget": 950"#);
        assert_eq!(
            measured(&small, Scenario::Tier, 48).unwrap().held_all,
            Some(false)
        );
    }
}
