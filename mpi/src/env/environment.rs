//! Environment: init and finalize, thread levels, versions, time, memory,
//! the processor name and the predefined attributes.

use std::ffi::{c_double, c_int};

use crate::ffi::args::{Out, TextOut};
use crate::ffi::os::AllocBase;

use crate::abi::class::*;
use crate::abi::*;
use crate::error::{Fail, Res};
use crate::info::Info;
use crate::info::INFOS;
use crate::state;
use crate::state::{lock, rt};

/// The library's version string (`MPI_Get_library_version`).
fn library_version() -> String {
    let device = if cfg!(feature = "ofi") {
        "shm, ofi"
    } else {
        "shm"
    };
    format!(
        "ferry-mpi {} (MPI {MPI_VERSION}.{MPI_SUBVERSION}, standard ABI {MPI_ABI_VERSION}.{MPI_ABI_SUBVERSION}; devices: {device})",
        env!("CARGO_PKG_VERSION")
    )
}

/// `MPI_Init`: starts ferry (`FERRY_*` variables apply); the thread
/// level is `FERRY_THREAD_LEVEL` if set, else `MPI_THREAD_SINGLE`.
pub(crate) fn init(_argc: usize, _argv: usize) -> Res {
    state::init(None).map(|_| ())
}

/// `MPI_Init_thread`: ferry provides every level, so `provided` is the
/// level asked for.
pub(crate) fn init_thread(
    _argc: usize,
    _argv: usize,
    required: c_int,
    mut provided: Out<'_, c_int>,
) -> Res {
    let rt = state::init(Some(required))?;
    provided.set(state::level_value(rt.level))
}

/// `MPI_Finalize`: collective; ferry's finalize after `MPI_COMM_SELF`'s
/// attributes are deleted and the attached buffer is flushed.
pub(crate) fn finalize() -> Res {
    let rt = rt()?;
    // MPI_COMM_SELF's attributes are deleted first, their callbacks
    // running while MPI still works (MPI 4.1 §11.2.4).
    crate::attr::calls::delete_all(rt, MPI_COMM_SELF, &rt.self_comm)?;
    state::end_world_model()
}

/// `MPI_Initialized`: callable at any time.
pub(crate) fn initialized(mut flag: Out<'_, c_int>) -> Res {
    flag.set(c_int::from(state::initialized()))
}

/// `MPI_Finalized`: callable at any time.
pub(crate) fn finalized(mut flag: Out<'_, c_int>) -> Res {
    flag.set(c_int::from(state::finalized()))
}

/// `MPI_Query_thread`.
pub(crate) fn query_thread(mut provided: Out<'_, c_int>) -> Res {
    let rt = rt()?;
    provided.set(state::level_value(rt.level))
}

/// `MPI_Is_thread_main`.
pub(crate) fn is_thread_main(mut flag: Out<'_, c_int>) -> Res {
    let main = rt()?.is_thread_main();
    flag.set(c_int::from(main))
}

/// `MPI_Abort`: ends the whole job with `errorcode` (ferry has no partial
/// abort; see `errhandler::abort_job`). Never returns.
pub(crate) fn abort(comm: usize, errorcode: c_int) -> c_int {
    let rank = state::rt_any().map_or(-1, |r| r.rank);
    eprintln!(
        "ferry-mpi: rank {rank}: MPI_Abort called on communicator {comm:#x} with error code {errorcode}; ending the job"
    );
    crate::errhandler::abort_job(errorcode)
}

/// `MPI_Get_version`: 5.0. Callable at any time.
pub(crate) fn get_version(mut version: Out<'_, c_int>, mut subversion: Out<'_, c_int>) -> Res {
    {
        version.set(MPI_VERSION)?;
        subversion.set(MPI_SUBVERSION)
    }
}

/// `MPI_Get_library_version`. Callable at any time.
pub(crate) fn get_library_version(mut version: TextOut<'_>, mut resultlen: Out<'_, c_int>) -> Res {
    version.set(&library_version(), Some(&mut resultlen))
}

/// `MPI_Abi_get_version`: ABI 1.0. Callable at any time.
pub(crate) fn abi_get_version(mut abi_major: Out<'_, c_int>, mut abi_minor: Out<'_, c_int>) -> Res {
    {
        abi_major.set(MPI_ABI_VERSION)?;
        abi_minor.set(MPI_ABI_SUBVERSION)
    }
}

/// `MPI_Abi_get_info`: a new info object with the sizes of the ABI's
/// integer types (`mpi_aint_size`, `mpi_count_size`, `mpi_offset_size`,
/// in bytes). The program frees it with `MPI_Info_free`.
pub(crate) fn abi_get_info(mut info: Out<'_, usize>) -> Res {
    let mut i = Info::default();
    i.set("mpi_aint_size", &std::mem::size_of::<isize>().to_string())?;
    i.set("mpi_count_size", "8")?;
    i.set("mpi_offset_size", "8")?;
    let h = lock(&INFOS)
        .insert(i)
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many info objects"))?;
    info.set(h)
}

/// `MPI_Get_processor_name`: the host name.
pub(crate) fn get_processor_name(mut name: TextOut<'_>, mut resultlen: Out<'_, c_int>) -> Res {
    let host = crate::ffi::os::hostname();
    name.set(&host, Some(&mut resultlen))
}

/// `MPI_Wtime`: seconds on a monotonic clock, from the first call (or
/// `MPI_Init`). Not synchronised between processes
/// (`MPI_WTIME_IS_GLOBAL` is false).
pub(crate) fn wtime() -> c_double {
    state::wtime()
}

/// `MPI_Wtick`: the clock's resolution (`std::time::Instant` counts
/// nanoseconds on Linux).
pub(crate) fn wtick() -> c_double {
    1e-9
}

/// `MPI_Alloc_mem`: `malloc` (the info is ignored: no memory kinds).
pub(crate) fn alloc_mem(size: isize, info: usize, mut baseptr: Out<'_, usize>) -> Res {
    let size = usize::try_from(size).map_err(|_| {
        Fail::msg(
            MPI_ERR_ARG,
            format!("MPI_Alloc_mem of a negative size {size}"),
        )
    })?;
    if info != MPI_INFO_NULL {
        crate::info::calls::check(info)?;
    }
    // SAFETY: plain malloc; one byte at least so that a zero-size
    // request still gets a pointer MPI_Free_mem can free.
    let p = crate::ffi::os::alloc(size).ok_or_else(|| {
        Fail::msg(
            MPI_ERR_NO_MEM,
            format!("MPI_Alloc_mem: cannot allocate {size} bytes"),
        )
    })?;
    // `baseptr` is really a `void **` (the table's ptrout).
    baseptr.set(p)
}

/// `MPI_Free_mem`: frees what `MPI_Alloc_mem` returned, or a buffer
/// `MPIX_Status_get_buffer` handed over.
pub(crate) fn free_mem(base: AllocBase) -> Res {
    if crate::ffi::os::release(base.addr()) {
        return Ok(());
    }
    base.free();
    Ok(())
}

/// `MPI_Pcontrol`: profiling control; with no profiling layer of its
/// own the library does nothing, which is the standard's meaning of the
/// call without one. Callable at any time.
///
/// C declares it variadic (`int MPI_Pcontrol(const int level, ...)`);
/// the extra arguments are not read. On the System V x86-64 and
/// AArch64 Linux calling conventions a variadic call passes `level`
/// where this function reads it.
pub(crate) fn pcontrol(_level: c_int) -> Res {
    Ok(())
}

/// `MPI_Info_create_env` (MPI 4.0): a new info object with what
/// `MPI_INFO_ENV` describes, from `argc`/`argv` (either may be 0/null)
/// and the process: `command`, `argv` (the arguments after the command,
/// space-separated; left out when there are none), `wdir`, `host`,
/// `arch`, `maxprocs` (the launcher's job size) and `thread_level`
/// (the level `FERRY_THREAD_LEVEL` asks for, else `MPI_THREAD_SINGLE`):
/// the same before `MPI_Init`, after it and after `MPI_Finalize`.
/// Callable before `MPI_Init`; the program frees it with
/// `MPI_Info_free`.
pub(crate) fn info_create_env(_argc: c_int, args: Vec<String>, mut info: Out<'_, usize>) -> Res {
    if info.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null info pointer"));
    }
    let mut i = Info::default();
    // Values an info cannot hold (empty, or longer than
    // MPI_MAX_INFO_VAL - 1 bytes) are left out.
    let mut set = |k: &str, v: &str| {
        if !v.is_empty() && v.len() < MPI_MAX_INFO_VAL {
            // Cannot fail: the key is ours, the value's length checked.
            let _ = i.set(k, v);
        }
    };
    if let Some((command, rest)) = args.split_first() {
        set("command", command);
        set("argv", &rest.join(" "));
    }
    if let Ok(dir) = std::env::current_dir() {
        set("wdir", &dir.to_string_lossy());
    }
    set("host", &crate::ffi::os::hostname());
    set("arch", std::env::consts::ARCH);
    // What the environment says, the same before MPI_Init, after it
    // and after MPI_Finalize: the launcher's job size (PMI_SIZE, which
    // ferryrun and Hydra set; 1 for a program started alone) and the
    // thread level FERRY_THREAD_LEVEL asks for (MPI_Init's default).
    let size = std::env::var("PMI_SIZE")
        .ok()
        .filter(|v| v.parse::<u32>().is_ok());
    set("maxprocs", size.as_deref().unwrap_or("1"));
    let requested = match std::env::var_os("FERRY_THREAD_LEVEL") {
        Some(_) => ferry::Config::from_env().map_or(ferry::ThreadLevel::Single, |c| c.thread_level),
        None => ferry::ThreadLevel::Single,
    };
    let level = match state::level_value(requested) {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    };
    set("thread_level", level);
    let h = lock(&INFOS)
        .insert(i)
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many info objects"))?;
    info.set(h)
}

/// `MPI_Get_hw_resource_info` (MPI 4.1): a new, empty info object
/// (ferry describes no hardware resources through it; Open MPI's is
/// empty too). The program frees it with `MPI_Info_free`.
pub(crate) fn get_hw_resource_info(mut hw_info: Out<'_, usize>) -> Res {
    if hw_info.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null info pointer"));
    }
    let h = lock(&INFOS)
        .insert(Info::default())
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many info objects"))?;
    hw_info.set(h)
}
