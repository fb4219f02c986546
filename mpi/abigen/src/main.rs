//! `cargo run -p ferry-mpi-abigen`: writes `mpi/include/mpi.h`'s
//! prototypes and `mpi/src/ffi/exports/` from `mpi/abi/functions.txt`
//! (see the crate docs). `--check` writes nothing and fails if a file is
//! not current.
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let check = std::env::args().any(|a| a == "--check");
    let files = match ferry_mpi_abigen::generate(&root) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("ferry-mpi-abigen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stale = 0;
    for (path, text) in files {
        let full = root.join(&path);
        if std::fs::read_to_string(&full).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        if check {
            eprintln!("ferry-mpi-abigen: {} is not current", path.display());
            stale += 1;
        } else if let Err(e) = std::fs::create_dir_all(full.parent().unwrap_or(&root))
            .and_then(|()| std::fs::write(&full, text))
        {
            eprintln!("ferry-mpi-abigen: {}: {e}", path.display());
            return ExitCode::FAILURE;
        } else {
            println!("wrote {}", path.display());
        }
    }
    if stale > 0 {
        eprintln!("ferry-mpi-abigen: run `cargo run -p ferry-mpi-abigen` and commit the result");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
