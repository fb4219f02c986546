//! The kernels against a naive reference: integers computed in `i128` and
//! truncated, floats in `f64` (exact enough for `f32`: the double rounding
//! of one add or multiply through `f64` is innocuous), pairs decoded by
//! their C layout written out again here.

use proptest::prelude::*;

use super::*;

const BUILTIN: [ReduceOp; 12] = [
    ReduceOp::Sum,
    ReduceOp::Prod,
    ReduceOp::Min,
    ReduceOp::Max,
    ReduceOp::Land,
    ReduceOp::Lor,
    ReduceOp::Lxor,
    ReduceOp::Band,
    ReduceOp::Bor,
    ReduceOp::Bxor,
    ReduceOp::MinLoc,
    ReduceOp::MaxLoc,
];

const TYPES: [Datatype; 17] = [
    Datatype::I8,
    Datatype::I16,
    Datatype::I32,
    Datatype::I64,
    Datatype::U8,
    Datatype::U16,
    Datatype::U32,
    Datatype::U64,
    Datatype::F32,
    Datatype::F64,
    Datatype::F32I32,
    Datatype::F64I32,
    Datatype::I64I32,
    Datatype::I32I32,
    Datatype::I16I32,
    Datatype::Opaque { size: 3 },
    Datatype::Opaque { size: 0 },
];

/// MPI's table, written as names so that it is not the same code as `check`.
fn defined_on(op: &ReduceOp) -> &'static str {
    match op.name() {
        "sum" | "prod" | "min" | "max" => "i8 i16 i32 i64 u8 u16 u32 u64 f32 f64",
        "land" | "lor" | "lxor" | "band" | "bor" | "bxor" => "i8 i16 i32 i64 u8 u16 u32 u64",
        "minloc" | "maxloc" => "f32i32 f64i32 i64i32 i32i32 i16i32",
        other => panic!("no table row for {other}"),
    }
}

fn defined(op: &ReduceOp, dtype: Datatype) -> bool {
    defined_on(op).split(' ').any(|name| name == dtype.name())
}

/// Every defined (op, type) combination of the built-in ops.
fn combos() -> Vec<(usize, Datatype)> {
    let mut all = Vec::new();
    for (i, op) in BUILTIN.iter().enumerate() {
        for dtype in TYPES {
            if defined(op, dtype) {
                all.push((i, dtype));
            }
        }
    }
    all
}

#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
enum Num {
    I(i128),
    F(f64),
}

macro_rules! by_scalar_type {
    ($dtype:expr, $int:ident => $i:expr, $float:ident => $f:expr) => {
        match $dtype {
            Datatype::I8 => {
                type $int = i8;
                $i
            }
            Datatype::I16 => {
                type $int = i16;
                $i
            }
            Datatype::I32 => {
                type $int = i32;
                $i
            }
            Datatype::I64 => {
                type $int = i64;
                $i
            }
            Datatype::U8 => {
                type $int = u8;
                $i
            }
            Datatype::U16 => {
                type $int = u16;
                $i
            }
            Datatype::U32 => {
                type $int = u32;
                $i
            }
            Datatype::U64 => {
                type $int = u64;
                $i
            }
            Datatype::F32 => {
                type $float = f32;
                $f
            }
            Datatype::F64 => {
                type $float = f64;
                $f
            }
            other => panic!("{} is not a scalar type", other.name()),
        }
    };
}

// One body for every width: for f64 the widening is the identity.
#[allow(clippy::useless_conversion)]
fn get(dtype: Datatype, bytes: &[u8]) -> Num {
    by_scalar_type!(dtype,
        T => Num::I(i128::from(T::from_ne_bytes(bytes.try_into().unwrap()))),
        F => Num::F(f64::from(F::from_ne_bytes(bytes.try_into().unwrap()))))
}

fn put(dtype: Datatype, value: Num, bytes: &mut [u8]) {
    match value {
        Num::I(v) => by_scalar_type!(dtype,
            T => bytes.copy_from_slice(&(v as T).to_ne_bytes()),
            F => bytes.copy_from_slice(&(v as F).to_ne_bytes())),
        Num::F(v) => by_scalar_type!(dtype,
            T => bytes.copy_from_slice(&(v as T).to_ne_bytes()),
            F => bytes.copy_from_slice(&(v as F).to_ne_bytes())),
    }
}

/// (value type, index offset) of a pair type, from C's struct layout.
fn pair_layout(dtype: Datatype) -> (Datatype, usize) {
    match dtype {
        Datatype::F32I32 => (Datatype::F32, 4),
        Datatype::F64I32 => (Datatype::F64, 8),
        Datatype::I64I32 => (Datatype::I64, 8),
        Datatype::I32I32 => (Datatype::I32, 4),
        Datatype::I16I32 => (Datatype::I16, 4),
        other => panic!("{} is not a pair type", other.name()),
    }
}

fn index(elem: &[u8], at: usize) -> i32 {
    i32::from_ne_bytes(elem[at..at + 4].try_into().unwrap())
}

/// The reference for one element: the result written over `b`.
fn reference(op: &ReduceOp, dtype: Datatype, a: &[u8], b: &mut [u8]) {
    if matches!(op, ReduceOp::MinLoc | ReduceOp::MaxLoc) {
        let (vt, at) = pair_layout(dtype);
        let vlen = vt.size();
        let (va, vb) = (get(vt, &a[..vlen]), get(vt, &b[..vlen]));
        let (ia, ib) = (index(a, at), index(b, at));
        let better = if matches!(op, ReduceOp::MinLoc) {
            va < vb
        } else {
            va > vb
        };
        if better || (va == vb && ia < ib) {
            b[..vlen].copy_from_slice(&a[..vlen]);
            b[at..at + 4].copy_from_slice(&a[at..at + 4]);
        }
        return;
    }
    let r = match (get(dtype, a), get(dtype, b)) {
        (Num::I(x), Num::I(y)) => Num::I(match op {
            ReduceOp::Sum => x + y,
            ReduceOp::Prod => x.wrapping_mul(y),
            ReduceOp::Min => x.min(y),
            ReduceOp::Max => x.max(y),
            ReduceOp::Land => i128::from(x != 0 && y != 0),
            ReduceOp::Lor => i128::from(x != 0 || y != 0),
            ReduceOp::Lxor => i128::from((x != 0) != (y != 0)),
            ReduceOp::Band => x & y,
            ReduceOp::Bor => x | y,
            ReduceOp::Bxor => x ^ y,
            _ => unreachable!(),
        }),
        (Num::F(x), Num::F(y)) => Num::F(match op {
            ReduceOp::Sum => x + y,
            ReduceOp::Prod => x * y,
            ReduceOp::Min => {
                if x < y {
                    x
                } else {
                    y
                }
            }
            ReduceOp::Max => {
                if x > y {
                    x
                } else {
                    y
                }
            }
            _ => unreachable!(),
        }),
        _ => unreachable!(),
    };
    put(dtype, r, b);
}

/// Equal bytes, except that any two NaNs of a float type are equal: the NaN
/// a hardware add returns is not the reference's business.
fn same(dtype: Datatype, got: &[u8], want: &[u8]) -> bool {
    if got == want {
        return true;
    }
    if !matches!(dtype, Datatype::F32 | Datatype::F64) || got.len() != want.len() {
        return false;
    }
    let size = dtype.size();
    got.chunks_exact(size).zip(want.chunks_exact(size)).all(|(g, w)| {
        g == w || matches!((get(dtype, g), get(dtype, w)), (Num::F(x), Num::F(y)) if x.is_nan() && y.is_nan())
    })
}

/// splitmix64: deterministic data without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `n` elements of random bytes; with `small`, values in -3..=3 (and
/// indices in 0..3 for pairs), so that ties, zeros and equal pairs are
/// common. Padding stays random either way.
fn sample(dtype: Datatype, n: usize, seed: u64, small: bool) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out: Vec<u8> = (0..n * dtype.size()).map(|_| rng.next() as u8).collect();
    if small && dtype.size() > 0 {
        for elem in out.chunks_exact_mut(dtype.size()) {
            let value = Num::I((rng.next() % 7) as i128 - 3);
            if matches!(dtype, Datatype::Opaque { .. }) {
                continue;
            }
            if dtype.is_pair() {
                let (vt, at) = pair_layout(dtype);
                put(vt, value, &mut elem[..vt.size()]);
                elem[at..at + 4].copy_from_slice(&((rng.next() % 3) as i32).to_ne_bytes());
            } else {
                put(dtype, value, elem);
            }
        }
    }
    out
}

const GUARD: u8 = 0xa5;

/// Runs `reduce_into` on copies of `input` and `inout` placed `in_off` and
/// `out_off` bytes into 8-aligned buffers, checks that nothing around
/// `inout` was written, and returns the result and the new `inout`.
fn run(
    op: &ReduceOp,
    dtype: Datatype,
    input: &[u8],
    inout: &[u8],
    (in_off, out_off): (usize, usize),
) -> (Result<()>, Vec<u8>) {
    let mut a = vec![0u64; input.len() / 8 + 2];
    let mut b = vec![0u64; inout.len() / 8 + 2];
    let a: &mut [u8] = bytemuck::cast_slice_mut(&mut a);
    let b: &mut [u8] = bytemuck::cast_slice_mut(&mut b);
    b.fill(GUARD);
    a[in_off..in_off + input.len()].copy_from_slice(input);
    b[out_off..out_off + inout.len()].copy_from_slice(inout);
    let (before, rest) = b.split_at_mut(out_off);
    let (target, after) = rest.split_at_mut(inout.len());
    let result = reduce_into(op, dtype, &a[in_off..in_off + input.len()], target);
    assert!(
        before.iter().chain(after.iter()).all(|&x| x == GUARD),
        "wrote outside inout"
    );
    (result, target.to_vec())
}

/// Compares the kernel with the reference on one (op, type, data) case.
fn check_case(
    op: &ReduceOp,
    dtype: Datatype,
    n: usize,
    seed: u64,
    small: bool,
    offs: (usize, usize),
) {
    let input = sample(dtype, n, seed, small);
    let inout = sample(dtype, n, seed ^ 0xffff, small);
    let mut want = inout.clone();
    let size = dtype.size();
    for (a, b) in input.chunks_exact(size).zip(want.chunks_exact_mut(size)) {
        reference(op, dtype, a, b);
    }
    let (result, got) = run(op, dtype, &input, &inout, offs);
    assert_eq!(result, Ok(()), "{} on {}", op.name(), dtype.name());
    assert!(
        same(dtype, &got, &want),
        "{} on {}, {n} elements, offsets {offs:?}, small {small}:\n got {got:?}\nwant {want:?}",
        op.name(),
        dtype.name()
    );
}

#[test]
fn every_defined_combination_matches_the_reference() {
    let combos = combos();
    assert_eq!(combos.len(), 4 * 10 + 6 * 8 + 2 * 5);
    for &(i, dtype) in &combos {
        for n in [0, 1, 7, 1000] {
            for offs in [(0, 0), (1, 1), (0, 1), (1, 0), (3, 5)] {
                for small in [false, true] {
                    check_case(&BUILTIN[i], dtype, n, n as u64 * 31 + i as u64, small, offs);
                }
            }
        }
    }
}

#[test]
fn undefined_combinations_are_refused_and_write_nothing() {
    for op in &BUILTIN {
        for dtype in TYPES {
            let n = 4 * dtype.size();
            let (result, got) = run(op, dtype, &vec![1; n], &vec![2; n], (0, 0));
            if defined(op, dtype) {
                assert_eq!(op.check(dtype), Ok(()));
                assert_eq!(result, Ok(()), "{} on {}", op.name(), dtype.name());
            } else {
                let want = Err(Error::Usage(UsageError::OpNotDefined {
                    op: op.name(),
                    datatype: dtype,
                }));
                assert_eq!(op.check(dtype), want);
                assert_eq!(result, want);
                assert_eq!(got, vec![2; n]);
            }
        }
    }
    let user = ReduceOp::User(UserOp::new(|_, _| {}, true));
    for dtype in TYPES {
        assert_eq!(user.check(dtype), Ok(()), "user op on {}", dtype.name());
    }
}

#[test]
fn bad_lengths_are_refused() {
    let mismatch = |r: Result<()>| matches!(r, Err(Error::Usage(UsageError::LengthMismatch(_))));
    let (result, got) = run(&ReduceOp::Sum, Datatype::I32, &[1; 8], &[2; 12], (0, 0));
    assert!(mismatch(result));
    assert_eq!(got, [2; 12]);
    assert!(mismatch(
        run(&ReduceOp::Sum, Datatype::I32, &[1; 6], &[2; 6], (1, 0)).0
    ));
    assert!(mismatch(
        run(
            &ReduceOp::MinLoc,
            Datatype::F64I32,
            &[1; 8],
            &[2; 8],
            (0, 0)
        )
        .0
    ));
    let user = ReduceOp::User(UserOp::new(|_, _| {}, true));
    assert!(mismatch(
        run(
            &user,
            Datatype::Opaque { size: 3 },
            &[1; 4],
            &[2; 4],
            (0, 0)
        )
        .0
    ));
    assert!(mismatch(
        run(
            &user,
            Datatype::Opaque { size: 0 },
            &[1; 4],
            &[2; 4],
            (0, 0)
        )
        .0
    ));
    assert_eq!(
        run(&user, Datatype::Opaque { size: 0 }, &[], &[], (0, 0)).0,
        Ok(())
    );
}

fn pair(value: f64, index: i32, pad: u8) -> [u8; 16] {
    let mut elem = [pad; 16];
    elem[..8].copy_from_slice(&value.to_ne_bytes());
    elem[8..12].copy_from_slice(&index.to_ne_bytes());
    elem
}

#[test]
fn loc_ties_go_to_the_smaller_index() {
    for op in [ReduceOp::MinLoc, ReduceOp::MaxLoc] {
        let mut inout = [pair(1.0, 3, 0), pair(1.0, 3, 0)].concat();
        let input = [pair(1.0, 5, 0), pair(1.0, 2, 0)].concat();
        reduce_into(&op, Datatype::F64I32, &input, &mut inout).unwrap();
        assert_eq!(
            inout,
            [pair(1.0, 3, 0), pair(1.0, 2, 0)].concat(),
            "{}",
            op.name()
        );
    }
    // A better value wins whatever its index.
    let mut inout = [pair(2.0, 0, 0), pair(2.0, 0, 0)].concat();
    let input = [pair(1.0, 9, 0), pair(3.0, 9, 0)].concat();
    reduce_into(&ReduceOp::MinLoc, Datatype::F64I32, &input, &mut inout).unwrap();
    assert_eq!(inout, [pair(1.0, 9, 0), pair(2.0, 0, 0)].concat());
    let mut inout = [pair(2.0, 0, 0), pair(2.0, 0, 0)].concat();
    reduce_into(&ReduceOp::MaxLoc, Datatype::F64I32, &input, &mut inout).unwrap();
    assert_eq!(inout, [pair(2.0, 0, 0), pair(3.0, 9, 0)].concat());
}

#[test]
fn f64i32_padding_is_ignored_on_input_and_kept_on_inout() {
    for op in [ReduceOp::MinLoc, ReduceOp::MaxLoc] {
        let input = [pair(1.0, 1, 0x00), pair(1.0, 7, 0x00)];
        let noisy = [pair(1.0, 1, 0xff), pair(1.0, 7, 0xee)];
        let inout = [pair(1.0, 4, 0x11), pair(1.0, 4, 0x22)].concat();
        let (mut quiet_out, mut noisy_out) = (inout.clone(), inout.clone());
        reduce_into(&op, Datatype::F64I32, &input.concat(), &mut quiet_out).unwrap();
        reduce_into(&op, Datatype::F64I32, &noisy.concat(), &mut noisy_out).unwrap();
        assert_eq!(quiet_out, noisy_out);
        // The first input won (index 1 < 4) and the padding is inout's.
        assert_eq!(quiet_out, [pair(1.0, 1, 0x11), pair(1.0, 4, 0x22)].concat());
    }
}

#[test]
fn user_op_takes_input_as_the_left_operand() {
    let twice_plus = UserOp::new(
        |input, inout| {
            for (a, b) in input.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
                let a = i64::from_ne_bytes(a.try_into().unwrap());
                let b2 = i64::from_ne_bytes((&*b).try_into().unwrap());
                b.copy_from_slice(&(2 * a + b2).to_ne_bytes());
            }
        },
        false,
    );
    assert!(!twice_plus.is_commutative());
    assert_eq!(
        format!("{twice_plus:?}"),
        "UserOp { commutative: false, .. }"
    );
    let op = ReduceOp::User(twice_plus);
    assert!(!op.is_commutative());
    assert!(BUILTIN.iter().all(ReduceOp::is_commutative));
    let bytes = |v: [i64; 3]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    for offs in [(0, 0), (1, 3)] {
        let (result, got) = run(
            &op,
            Datatype::I64,
            &bytes([1, 2, 3]),
            &bytes([10, 20, 30]),
            offs,
        );
        assert_eq!(result, Ok(()));
        assert_eq!(
            got,
            bytes([12, 24, 36]),
            "2 * input + inout, not 2 * inout + input"
        );
    }
}

#[test]
fn float_min_max_keep_inout_on_nan_and_ties() {
    let f = |v: &[f64]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    let input = f(&[f64::NAN, 1.0, -0.0, 5.0]);
    let inout = f(&[1.0, f64::NAN, 0.0, 2.0]);
    for (op, last) in [(ReduceOp::Min, 2.0), (ReduceOp::Max, 5.0)] {
        let mut out = inout.clone();
        reduce_into(&op, Datatype::F64, &input, &mut out).unwrap();
        let got: Vec<f64> = out
            .chunks_exact(8)
            .map(|x| f64::from_ne_bytes(x.try_into().unwrap()))
            .collect();
        assert_eq!(got[0], 1.0, "a NaN input is ignored");
        assert!(got[1].is_nan(), "a NaN in inout stays");
        assert!(
            got[2] == 0.0 && got[2].is_sign_positive(),
            "a tie keeps inout"
        );
        assert_eq!(got[3], last);
    }
}

#[test]
fn logical_ops_produce_zero_or_one() {
    let input: [i32; 4] = [0, 0, 7, -2];
    let inout: [i32; 4] = [0, 9, 0, 3];
    for (op, want) in [
        (ReduceOp::Land, [0, 0, 0, 1]),
        (ReduceOp::Lor, [0, 1, 1, 1]),
        (ReduceOp::Lxor, [0, 1, 1, 0]),
    ] {
        let mut out = inout;
        reduce_into(
            &op,
            Datatype::I32,
            bytemuck::bytes_of(&input),
            bytemuck::bytes_of_mut(&mut out),
        )
        .unwrap();
        assert_eq!(out, want, "{}", op.name());
    }
}

#[test]
fn sizes_follow_the_c_layouts_and_names_are_distinct() {
    let sizes: Vec<usize> = TYPES.iter().map(|t| t.size()).collect();
    assert_eq!(sizes, [1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 16, 16, 8, 8, 3, 0]);
    let mut names: Vec<&str> = TYPES[..15].iter().map(|t| t.name()).collect();
    names.extend(BUILTIN.iter().map(ReduceOp::name));
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count);
}

proptest! {
    #[test]
    fn random_cases_match_the_reference(
        combo in prop::sample::select(combos()),
        n in 0usize..80,
        offs in (0usize..8, 0usize..8),
        seed: u64,
        small: bool,
    ) {
        check_case(&BUILTIN[combo.0], combo.1, n, seed, small, offs);
    }

    #[test]
    fn never_panics(
        op in 0usize..12,
        dtype in 0usize..TYPES.len(),
        input in prop::collection::vec(any::<u8>(), 0..64),
        inout in prop::collection::vec(any::<u8>(), 0..64),
        offs in (0usize..8, 0usize..8),
    ) {
        let _ = run(&BUILTIN[op], TYPES[dtype], &input, &inout, offs);
    }
}
