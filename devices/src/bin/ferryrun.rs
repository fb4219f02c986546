//! `ferryrun -n N [--label] [--timeout SECS] PROGRAM [ARGS...]`: start an
//! N-rank ferry job on this node. `ferryrun --help` documents it; the
//! logic is in `ferry::launcher`.

fn main() {
    std::process::exit(ferry::launcher::main());
}
