//! Never-panic (and never-abort) check: many random, truncated and mutated frames through the
//! server's request decoder and the client's response decoder, from a fixed ChaCha seed.
//!
//! Bug mechanism this guards against: kafka-protocol reads an array length from the wire and
//! calls `Vec::with_capacity(n)` before reading any element, so one flipped length byte
//! (0x7fffffff topics of 72 bytes each) made the allocator fail and Rust abort the whole
//! process, which `catch_unwind` cannot stop. The shape check in `wire::shape` refuses such
//! frames first; if it ever lets one through, this test dies instead of passing.

use groupsim_wire::test_util as wire_support;

use bytes::Bytes;
use groupsim_wire::codec::{decode_request, decode_response, encode_request, encode_response};
use groupsim_wire::versions::served_apis;
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::StrBytes;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wire_support::{sample_request, sample_response};

/// Valid frames of every served API and version, to mutate.
fn corpus() -> (Vec<Bytes>, Vec<(ApiKey, i16, Bytes)>) {
    let mut requests = Vec::new();
    let mut responses = Vec::new();
    for (api_key, range) in served_apis() {
        for v in range.min..=range.max {
            let header = RequestHeader::default()
                .with_request_api_key(api_key as i16)
                .with_request_api_version(v)
                .with_correlation_id(1)
                .with_client_id(Some(StrBytes::from_static_str("c")));
            requests.push(encode_request(&header, &sample_request(api_key, v)).unwrap());
            responses.push((
                api_key,
                v,
                encode_response(1, api_key, v, &sample_response(api_key, v)).unwrap(),
            ));
        }
    }
    (requests, responses)
}

fn mutate(rng: &mut ChaCha8Rng, frame: &[u8]) -> Vec<u8> {
    let mut out = frame.to_vec();
    for _ in 0..rng.random_range(1..4) {
        if out.is_empty() {
            break;
        }
        let at = rng.random_range(0..out.len());
        match rng.random_range(0..6) {
            0 => out[at] ^= 1 << rng.random_range(0..8),
            1 => out[at] = rng.random(),
            // Lengths are where the danger is: write a big i32 / varint-ish run.
            2 => {
                for (i, b) in [0x7f, 0xff, 0xff, 0xff].iter().enumerate() {
                    if let Some(slot) = out.get_mut(at + i) {
                        *slot = *b;
                    }
                }
            }
            3 => {
                for i in 0..5 {
                    if let Some(slot) = out.get_mut(at + i) {
                        *slot = 0xff;
                    }
                }
            }
            4 => out.truncate(at),
            _ => {
                let extra: u8 = rng.random();
                out.insert(at, extra);
            }
        }
    }
    out
}

#[test]
fn decoders_survive_random_truncated_and_mutated_frames() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x006b_6166_6b61);
    let (requests, responses) = corpus();
    let apis = served_apis();
    let (mut ok, mut err) = (0u32, 0u32);
    let mut tally = |r: bool| if r { ok += 1 } else { err += 1 };

    for _ in 0..20_000 {
        // Mutated valid request.
        let base = &requests[rng.random_range(0..requests.len())];
        tally(decode_request(Bytes::from(mutate(&mut rng, base))).is_ok());
        // Mutated valid response, decoded as what the client expects.
        let (api_key, v, base) = &responses[rng.random_range(0..responses.len())];
        tally(decode_response(Bytes::from(mutate(&mut rng, base)), *api_key, *v).is_ok());
        // Pure noise with a plausible header for a served API and version.
        let (api_key, range) = apis[rng.random_range(0..apis.len())];
        let v = rng.random_range(range.min..=range.max);
        let mut noise = Vec::new();
        noise.extend_from_slice(&(api_key as i16).to_be_bytes());
        noise.extend_from_slice(&v.to_be_bytes());
        for _ in 0..rng.random_range(0..64) {
            noise.push(rng.random());
        }
        tally(decode_request(Bytes::from(noise.clone())).is_ok());
        tally(decode_response(Bytes::from(noise), api_key, v).is_ok());
    }
    // The corpus is being exercised, not just rejected at the first byte.
    assert!(ok > 100, "only {ok} mutated frames decoded");
    assert!(err > 10_000, "only {err} frames refused");
}

/// Regression, found by the `frame_decode` fuzz target: a 14-byte answer read as
/// DescribeDelegationToken v1 (an API we hold no layout for) made kafka-protocol size a vector
/// of 0x3001_0029 tokens (4.4 GB) before reading one, and the allocation aborted the process.
/// The decoder read answers without a layout whole, trusting kafka-protocol; it now refuses
/// them, and CreateTopics (the one such API check-broker sends) has a layout.
#[test]
fn an_answer_without_a_known_layout_is_refused_not_read() {
    let frame = Bytes::from_static(&[0x00, 0x00, 0x00, 0x00, 0x00, 0x1e, 0x01, 0x00, 0x29, 0x30]);
    let e = decode_response(frame, ApiKey::DescribeDelegationToken, 1).expect_err("refused");
    assert!(e.to_string().contains("no layout"), "{e}");
    // CreateTopics answers are walked like the served APIs': a huge topic count is refused.
    let mut frame = vec![0, 0, 0, 1]; // correlation id
    frame.extend_from_slice(&[0, 0, 0, 0]); // throttle time (v2+)
    frame.extend_from_slice(&0x7fff_ffffi32.to_be_bytes()); // topics
    let e = decode_response(Bytes::from(frame), ApiKey::CreateTopics, 2).expect_err("refused");
    assert!(e.to_string().contains("CreateTopics"), "{e}");
}
