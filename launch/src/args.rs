//! `ferryrun`'s command line.

use std::ffi::{OsStr, OsString};
use std::time::Duration;

use crate::bind::{BindTo, MapBy};

/// The largest job `ferryrun` starts: each rank costs the launcher three
/// descriptors and a process, and one node has little use for more.
pub const MAX_RANKS: u32 = 4096;

/// What to launch, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Number of ranks (`-n`).
    pub ranks: u32,
    /// Prefix every output line with `[rank] ` (`--label`).
    pub label: bool,
    /// Kill the job and exit 124 after this long (`--timeout`).
    pub timeout: Option<Duration>,
    /// Bind each rank to a CPU (`--bind-to`).
    pub bind_to: BindTo,
    /// Which CPU each rank gets (`--map-by`).
    pub map_by: MapBy,
    /// Print each rank's binding on stderr (`--report-bindings`).
    pub report_bindings: bool,
    /// The program every rank runs.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// Launch a job.
    Run(Options),
    /// Print the help text.
    Help,
    /// Print the version.
    Version,
}

/// A command-line mistake, reported with the usage line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The help text (`ferryrun --help`).
pub const HELP: &str = "\
ferryrun: start an N-rank ferry job on this node

Usage: ferryrun -n N [--label] [--timeout SECS] [--bind-to core|none|auto]
                [--map-by core|package] [--report-bindings] [--] PROGRAM [ARGS...]

Options:
  -n, -np, --np N     number of ranks to start (1 to 4096)
  -l, --label         prefix every line the ranks print with \"[rank] \"
                      (stdout to stdout, stderr to stderr, whole lines only)
  -t, --timeout SECS  kill the job and exit with 124 if it is still running
                      after SECS seconds (decimals allowed)
  --bind-to WHAT      core: bind each rank to one CPU (an error if there are
                      more ranks than CPUs ferryrun may use); none: no
                      binding; auto (the default): core when the ranks fit
                      on those CPUs, none when the job oversubscribes them
  --map-by HOW        core (the default): rank i gets the i-th CPU ferryrun
                      may use (see `taskset`); package: ranks are dealt
                      over the physical packages (sockets) first
  --report-bindings   print each rank's binding on stderr as it starts
  -h, --help          print this help
  -V, --version       print the version
Options end at the first argument that is not one; PROGRAM's own options
follow it untouched. `--` also ends them.

Each rank runs PROGRAM with a PMI-1 connection to ferryrun, so it finds its
peers through ferry_pmi::PmiClient (or any PMI-1 client, e.g. MPICH's):
  PMI_FD, PMI_RANK, PMI_SIZE   the PMI-1 socket, rank and job size
  FERRY_JOB_ID                 the job's random id, also the PMI kvsname
  MPI_LOCALRANKID, MPI_LOCALNRANKS   rank and size on this node (as Hydra)
Without --label the ranks share ferryrun's stdout and stderr. Only rank 0
reads ferryrun's stdin, and only when it is not a terminal; the others get
/dev/null. Each rank runs in its own process group. ferryrun raises its
own open-file limit as far as the hard limit allows (it needs about 4
descriptors per rank); the ranks keep the limit ferryrun was started with.

Failure handling:
  - ferryrun exits with the first non-zero exit code of any rank (128+N when
    a rank is killed by signal N), or with the code a rank passes to PMI
    abort (taken modulo 256; 1 if that leaves 0); 0 when every rank exits 0.
  - On the first failure it kills the rest of the job: SIGTERM to each
    rank's process group, then SIGKILL after 2 seconds.
  - --timeout: the job is killed the same way and ferryrun exits with 124.
  - SIGINT, SIGTERM and SIGHUP sent to ferryrun are forwarded to every rank;
    a second one kills the job with SIGKILL at once.
  - A rank that breaks the PMI protocol fails the job (exit 1 unless a rank
    already failed); a program that cannot be started gives 127 (not found)
    or 126 (not executable).
  - Other launcher errors exit with 1, usage errors with 2, always with a
    message on stderr.

Cleanup: when the job ends, however it ends, ferryrun removes every file in
/dev/shm whose name starts with ferry-<FERRY_JOB_ID> (the shared-memory
device names its segments ferry-<jobid>-<random>), so a killed job leaves
no shared memory behind. If ferryrun itself is killed with SIGKILL it cannot
clean up; its ranks then fail at their next PMI call.
";

/// Parses `ferryrun`'s arguments (without the program name).
///
/// # Errors
/// [`UsageError`] naming the offending argument.
pub fn parse_args<I>(args: I) -> Result<Invocation, UsageError>
where
    I: IntoIterator<Item = OsString>,
{
    let mut args = args.into_iter();
    let mut ranks = None;
    let mut label = false;
    let mut timeout = None;
    let mut bind_to = BindTo::default();
    let mut map_by = MapBy::default();
    let mut report_bindings = false;
    let program = loop {
        let Some(arg) = args.next() else {
            return Err(UsageError("no program given".into()));
        };
        let Some(text) = arg.to_str() else {
            // Not UTF-8: cannot be one of our options, so it is the program.
            break arg;
        };
        // `--opt=value` as well as `--opt value`.
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (text, None),
        };
        let mut value = |what: &str| -> Result<String, UsageError> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args
                    .next()
                    .and_then(|v| v.into_string().ok())
                    .ok_or_else(|| UsageError(format!("{name} needs {what}"))),
            }
        };
        match name {
            "-h" | "--help" => return Ok(Invocation::Help),
            "-V" | "--version" => return Ok(Invocation::Version),
            "-n" | "-np" | "--np" | "--n" => ranks = Some(parse_ranks(&value("a rank count")?)?),
            "-l" | "--label" if inline.is_none() => label = true,
            "-t" | "--timeout" => timeout = Some(parse_timeout(&value("a number of seconds")?)?),
            "--bind-to" | "-bind-to" => bind_to = BindTo::parse(&value("core, none or auto")?)?,
            "--map-by" | "-map-by" => map_by = MapBy::parse(&value("core or package")?)?,
            "--report-bindings" if inline.is_none() => report_bindings = true,
            "--" => match args.next() {
                Some(p) => break p,
                None => return Err(UsageError("no program given after --".into())),
            },
            _ if name.starts_with('-') && name.len() > 1 => {
                return Err(UsageError(format!("unknown option {text}")))
            }
            _ => break arg,
        }
    };
    if program.is_empty() || program == OsStr::new("") {
        return Err(UsageError("the program name is empty".into()));
    }
    let ranks = ranks.ok_or_else(|| UsageError("-n N is required".into()))?;
    Ok(Invocation::Run(Options {
        ranks,
        label,
        timeout,
        bind_to,
        map_by,
        report_bindings,
        program,
        args: args.collect(),
    }))
}

fn parse_ranks(s: &str) -> Result<u32, UsageError> {
    match s.parse::<u32>() {
        Ok(n) if (1..=MAX_RANKS).contains(&n) => Ok(n),
        _ => Err(UsageError(format!(
            "-n {s:?}: the rank count must be a whole number from 1 to {MAX_RANKS}"
        ))),
    }
}

fn parse_timeout(s: &str) -> Result<Duration, UsageError> {
    match s.parse::<f64>() {
        // Up to a year: keeps Duration arithmetic far from overflow.
        Ok(secs) if secs > 0.0 && secs <= 31_536_000.0 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(UsageError(format!(
            "--timeout {s:?}: expected a positive number of seconds"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, UsageError> {
        parse_args(args.iter().map(OsString::from))
    }

    fn run(args: &[&str]) -> Options {
        match parse(args) {
            Ok(Invocation::Run(o)) => o,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn parses_the_usual_forms() {
        let o = run(&[
            "-n",
            "4",
            "--label",
            "--timeout",
            "2.5",
            "prog",
            "-x",
            "--label",
        ]);
        assert_eq!(o.ranks, 4);
        assert!(o.label);
        assert_eq!(o.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(o.program, "prog");
        assert_eq!(o.args, ["-x", "--label"]);
        let o = run(&["--np=2", "--timeout=1", "--", "-weird-prog"]);
        assert_eq!(
            (o.ranks, o.label, o.program.to_str()),
            (2, false, Some("-weird-prog"))
        );
        assert_eq!((o.bind_to, o.map_by), (BindTo::Auto, MapBy::Core));
        let o = run(&[
            "-n",
            "2",
            "--bind-to",
            "none",
            "--map-by=package",
            "--report-bindings",
            "p",
        ]);
        assert_eq!(
            (o.bind_to, o.map_by, o.report_bindings),
            (BindTo::None, MapBy::Package, true)
        );
        assert_eq!(parse(&["--help"]), Ok(Invocation::Help));
        assert_eq!(parse(&["-n", "2", "-V"]), Ok(Invocation::Version));
    }

    #[test]
    fn rejects_mistakes_with_a_reason() {
        let err = |args: &[&str]| parse(args).unwrap_err().0;
        assert!(err(&["prog"]).contains("-n N is required"));
        assert!(err(&["-n", "2"]).contains("no program"));
        assert!(err(&["-n", "0", "p"]).contains("from 1 to"));
        assert!(err(&["-n", "x", "p"]).contains("from 1 to"));
        assert!(err(&["-n", "5000", "p"]).contains("from 1 to"));
        assert!(err(&["-n"]).contains("-n needs a rank count"));
        assert!(err(&["-n", "1", "--timeout", "-1", "p"]).contains("positive"));
        assert!(err(&["-n", "1", "--timeout", "NaN", "p"]).contains("positive"));
        assert!(err(&["-n", "1", "--frobnicate", "p"]).contains("unknown option --frobnicate"));
        assert!(err(&["-n", "1", "--label=yes", "p"]).contains("unknown option"));
        assert!(err(&["-n", "1", "--"]).contains("after --"));
        assert!(err(&["-n", "1", "--bind-to", "l3", "p"]).contains("core, none or auto"));
        assert!(err(&["-n", "1", "--map-by"]).contains("--map-by needs"));
    }
}
