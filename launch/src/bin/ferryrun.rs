//! `ferryrun -n N [--label] [--timeout SECS] PROGRAM [ARGS...]`: start an
//! N-rank ferry job on this node. `ferryrun --help` documents it; the
//! logic is in the crate `ferry-launch`.

fn main() {
    std::process::exit(ferry_launch::main());
}
