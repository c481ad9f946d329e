//! `#[derive(Equivalence)]` on several struct shapes, checked against `offset_of!` and
//! `size_of`, and packed through the engine to show padding is never read.

use std::mem::{offset_of, size_of};

use oxmpi::datatype::{pack, Datatyped, Predefined, Type};

#[derive(oxmpi::Equivalence, Clone, Copy, Default)]
#[repr(C)]
struct Padded {
    a: u8,
    b: f64,
    c: u16,
}

#[derive(oxmpi::Equivalence, Clone, Copy, Default)]
struct Tuple(i32, [f32; 3]);

#[derive(oxmpi::Equivalence, Clone, Copy, Default)]
struct Nested {
    head: Padded,
    grid: [[i16; 2]; 3],
    tail: Tuple,
}

#[derive(oxmpi::Equivalence)]
struct Generic<T: Copy> {
    x: T,
    n: u8,
}

/// Every (offset, len) run of one value's data.
fn runs(t: &Type) -> Vec<(i64, u64)> {
    let mut v = Vec::new();
    t.layout().walk(0, 0, &mut |o: i64, n: u64| {
        v.push((o, n));
        true
    });
    v
}

#[test]
fn padded_struct_lists_only_its_fields() {
    let t = Padded::datatype();
    assert_eq!(t.extent(), size_of::<Padded>() as i64);
    assert_eq!(t.size(), 1 + 8 + 2);
    assert_eq!(
        runs(&t),
        vec![
            (offset_of!(Padded, a) as i64, 1),
            (offset_of!(Padded, b) as i64, 10)
        ]
    );
    // Sending three values packs 33 bytes; the gap bytes of a receive are untouched.
    let src = [Padded { a: 1, b: 2.0, c: 3 }; 3];
    let mut out = vec![0u8; 33];
    // SAFETY: `src` holds 3 values; the datatype lists only their (initialized) fields, so
    // no padding byte is read.
    let n = unsafe { pack::pack_raw(&t, src.as_ptr() as *const u8, 3, 0, &mut out) };
    assert_eq!(n, 33);
    let mut dst = [Padded::default(); 3];
    // SAFETY: `dst` holds 3 values; only field bytes are written, each accepting any bits.
    let m = unsafe { pack::unpack_raw(&t, dst.as_mut_ptr() as *mut u8, 3, 0, &out) };
    assert_eq!(m, 33);
    assert!(dst.iter().all(|p| p.a == 1 && p.b == 2.0 && p.c == 3));
}

#[test]
fn tuple_nested_array_and_generic_structs() {
    let t = Tuple::datatype();
    assert_eq!((t.size(), t.extent()), (16, size_of::<Tuple>() as i64));
    let n = Nested::datatype();
    assert_eq!(n.extent(), size_of::<Nested>() as i64);
    assert_eq!(n.size(), 11 + 12 + 16);
    let (tlb, text) = n.true_extent();
    assert!(tlb >= 0 && tlb + text <= size_of::<Nested>() as i64);
    // Signature: u8, f64, u16, 6 x i16, i32, 3 x f32.
    assert_eq!(n.signature().elements(), 1 + 1 + 1 + 6 + 1 + 3);
    let g = Generic::<f64>::datatype();
    assert_eq!((g.size(), g.extent()), (9, 16));
    // A derived struct with the same field types matches a plain struct type.
    let plain = Type::structure(
        &[1, 3],
        &[0, 4],
        &[
            Type::predefined(Predefined::INT32_T),
            Type::predefined(Predefined::FLOAT),
        ],
    )
    .unwrap();
    assert!(t.check_match(2, &plain, 2).is_ok());
    assert!(t
        .check_match(1, &Type::predefined(Predefined::DOUBLE), 2)
        .is_err());
}
