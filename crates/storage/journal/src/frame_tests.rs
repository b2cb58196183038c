use super::*;

fn link(block: u64) -> Link {
    Link {
        parent: B256::with_last_byte(block as u8),
        root: B256::with_last_byte(block as u8 + 1),
    }
}

fn frames(blocks: &[(u64, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut frame = Vec::new();
    for (block, payload) in blocks {
        encode(*block, link(*block), payload, &mut frame);
        out.extend_from_slice(&frame);
    }
    out
}

#[test]
fn whole_frames_scan_clean_with_their_roots() {
    let bytes = frames(&[(7, b"seven"), (8, b""), (9, &[0xab; 300])]);
    let (found, damage) = scan(&bytes, 0);
    assert_eq!(damage, None);
    assert_eq!(
        found.iter().map(|f| f.block).collect::<Vec<_>>(),
        vec![7, 8, 9]
    );
    assert_eq!(&bytes[found[0].payload.clone()], b"seven");
    assert_eq!(found[1].link, link(8));
    assert_eq!(bytes[found[2].payload.clone()].len(), 300);
    assert_eq!(found[2].end(), bytes.len());
}

#[test]
fn every_bit_of_a_header_is_checked_before_the_payload_is_read() {
    let bytes = frames(&[(1, b"first"), (2, b"second")]);
    for bit in 0..HEADER * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        assert!(
            matches!(frame_at(&flipped, 0), Err(Damage::BadHeader(_))),
            "bit {bit}"
        );
        // The next frame's header still verifies: something follows.
        assert_eq!(
            next_header_after(&flipped, 0),
            Some(HEADER + ROOTS + 5 + TRAILER)
        );
    }
}

#[test]
fn every_bit_after_the_header_is_checked_by_the_frame_check() {
    let bytes = frames(&[(1, b"first")]);
    for bit in HEADER * 8..bytes.len() * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        assert_eq!(
            frame_at(&flipped, 0),
            Err(Damage::Checksum(Header { len: 5, block: 1 })),
            "bit {bit}"
        );
    }
}

#[test]
fn a_short_frame_is_incomplete_with_its_block_once_the_header_is_whole() {
    let bytes = frames(&[(3, &[9; 40])]);
    for cut in 0..bytes.len() {
        let damage = frame_at(&bytes[..cut], 0).expect_err("short");
        if cut < HEADER {
            assert_eq!(damage, Damage::ShortHeader, "cut at {cut}");
        } else {
            assert_eq!(damage.block(), Some(3), "cut at {cut}");
        }
    }
}
