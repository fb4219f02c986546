//! # ferry-mpi-abigen
//!
//! ferry-mpi's C boundary comes from one table, `mpi/abi/functions.txt`:
//! every exported function once, with its C prototype and how its shim
//! reaches the body. From it this crate writes
//! - the function prototypes of `mpi/include/mpi.h` (`MPI_X` and
//!   `PMPI_X`), between the header's `BEGIN GENERATED` and `END GENERATED`
//!   lines;
//! - `mpi/src/ffi/exports/<chapter>.rs`: one `export!` shim per
//!   function (`PMPI_X` with the body under the panic guard and the error
//!   handler, `MPI_X` calling it), each decoding the C arguments
//!   (`ffi::args`) and calling the safe body the table names.
//!
//! MPICH (`maint/gen_binding_c.py`) and Open MPI 6 (`ompi/mpi/bindings/`)
//! generate their bindings the same way. The output is checked in; the
//! test `tests/current.rs` fails when it is not what the table gives, so
//! CI catches a table edited without `cargo run -p ferry-mpi-abigen`.
//!
//! ## The table
//! ```text
//! # a comment
//! @ p2p/persist Persistent point-to-point      <- a section: chapter/module title
//! | an optional header comment for the section (replaces /* title */)
//! int MPI_Send_init(const void *buf, ...); on=comm
//! ```
//! A row is a C prototype ending in `;`, then attributes:
//! - `on=ARG`: a failure is raised on communicator argument `ARG` (its
//!   error handler applies); without it, on `MPI_COMM_SELF`;
//! - `fast`: the body has a fast path `BODY_fast` returning
//!   `Option<Res>` (`None` runs the body), under the same guard;
//! - `quiet`: guarded, but a failure is returned as its class with no
//!   error handler run (the tools interface's functions).
//! - `raw`: no guard: the body returns the C return type itself (clocks,
//!   address arithmetic, `MPI_Abort`);
//! - `body=PATH`: the body, relative to the crate root (default: the
//!   section's module, then the name without `MPI_`/`MPIX_`, lower case).
//!
//! `|` lines between rows are a comment placed in the header before the
//! next row. Each C type maps to one Rust type ([`rust_type`]): handles
//! cross as `usize`, counts as `c_int`/`i64`, pointers as raw pointers.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt::Write as _;

/// One table: its sections in order.
#[derive(Debug)]
pub struct Table {
    /// The sections, in the header's order.
    pub sections: Vec<Section>,
}

/// A group of functions: one header comment, one chapter file.
#[derive(Debug)]
pub struct Section {
    /// The generated file (`exports/<chapter>.rs`) its shims go to.
    pub chapter: String,
    /// The default module of its bodies, relative to the crate root.
    pub module: String,
    /// Its title (`/* title */` in the header unless `comment` is set).
    pub title: String,
    /// The header comment's lines, if longer than the title.
    pub comment: Vec<String>,
    /// Its functions.
    pub rows: Vec<Row>,
}

/// One exported function.
#[derive(Debug)]
pub struct Row {
    /// The prototype as written (without the `;`).
    pub proto: String,
    /// The C return type.
    pub ret: String,
    /// `MPI_X` or `MPIX_X`.
    pub name: String,
    /// The parameters, without C's `...`.
    pub params: Vec<Param>,
    /// Whether C declares it variadic (the Rust shim takes the fixed part).
    pub variadic: bool,
    /// The communicator argument failures are raised on.
    pub on: Option<String>,
    /// Whether the body has a `_fast` twin.
    pub fast: bool,
    /// Whether the shim is unguarded.
    pub raw: bool,
    /// A failure is returned as its class, with no error handler run
    /// (the tools interface).
    pub quiet: bool,
    /// The body's path relative to the crate root.
    pub body: String,
    /// Header comment lines before this row.
    pub comment: Vec<String>,
    /// `len(P)=E`: the length of array or string argument `P`.
    pub lens: Vec<(String, String)>,
    /// `addr=P`: a `void *` argument the body takes as an address (`usize`).
    pub addrs: Vec<String>,
    /// `ptrout=P`: a `void *` argument that is really a `void **` out-argument.
    pub ptrouts: Vec<String>,
    /// `later=P`: an out-argument written when the request the call
    /// starts completes (`MPI_Comm_idup`'s `newcomm`).
    pub laters: Vec<String>,
    /// `inout=P`: an array the function reads and writes (with `len(P)`).
    pub inouts: Vec<String>,
    /// `dec(P)=NAME`: argument `P` decoded by `crate::ffi::args::NAME`
    /// (with `len(P)`'s length as a second argument; `NAME?` if it can
    /// fail).
    pub decs: Vec<(String, String)>,
}

/// One parameter.
#[derive(Debug)]
pub struct Param {
    /// Its C name.
    pub name: String,
    /// Its C type, normalised: `const int []`, `MPI_Status *`.
    pub ctype: String,
}

/// The Rust type a C parameter or return type crosses as.
///
/// # Errors
/// A C type the table may not use (add it here, with its Rust form).
pub fn rust_type(ctype: &str) -> Result<String, String> {
    const HANDLES: &[&str] = &[
        "MPI_Comm",
        "MPI_Datatype",
        "MPI_Errhandler",
        "MPI_Group",
        "MPI_Info",
        "MPI_Message",
        "MPI_Op",
        "MPI_Request",
        "MPI_Session",
        "MPI_Win",
        "MPI_File",
        "MPI_T_enum",
        "MPI_T_cvar_handle",
        "MPI_T_pvar_handle",
        "MPI_T_pvar_session",
        "MPI_T_event_registration",
        "MPI_T_event_instance",
    ];
    let base = |t: &str| -> Option<&'static str> {
        Some(match t {
            "int" => "c_int",
            "double" => "c_double",
            "void" => "c_void",
            "char" => "c_char",
            "MPI_Aint" => "isize",
            "MPI_Count" | "MPI_Offset" => "i64",
            // Enumerations the tools interface passes.
            "MPI_T_cb_safety" | "MPI_T_source_order" => "c_int",
            "MPI_Status" => "MpiStatus",
            h if HANDLES.contains(&h) => "usize",
            _ => return None,
        })
    };
    // Callbacks: `Option` of the function type, except the attribute
    // copy and delete functions, which cross as addresses because the
    // ABI's predefined ones (MPI_COMM_DUP_FN = 0x1) are not functions.
    let t = ctype.trim();
    let callback = match t {
        "MPI_User_function *" => Some("Option<UserFn>"),
        "MPI_User_function_c *" => Some("Option<UserFnC>"),
        "MPI_Comm_errhandler_function *" => Some("Option<CommErrhFn>"),
        "MPI_Session_errhandler_function *" => Some("Option<SessionErrhFn>"),
        "MPI_Win_errhandler_function *" => Some("Option<CommErrhFn>"),
        // The tools interface's event callbacks, passed as functions (the
        // type decays to a pointer): only their addresses are kept.
        "MPI_T_event_cb_function"
        | "MPI_T_event_free_cb_function"
        | "MPI_T_event_dropped_cb_function" => Some("usize"),
        "MPI_Grequest_query_function *" => Some("Option<GrequestQueryFn>"),
        "MPI_Grequest_free_function *" => Some("Option<GrequestFreeFn>"),
        "MPI_Grequest_cancel_function *" => Some("Option<GrequestCancelFn>"),
        "MPI_Comm_copy_attr_function *"
        | "MPI_Comm_delete_attr_function *"
        | "MPI_Type_copy_attr_function *"
        | "MPI_Type_delete_attr_function *"
        | "MPI_Win_copy_attr_function *"
        | "MPI_Win_delete_attr_function *"
        | "MPI_Copy_function *"
        | "MPI_Delete_function *" => Some("usize"),
        // `int ranges[][3]`: read only.
        "int [][3]" => Some("*const [c_int; 3]"),
        _ => None,
    };
    if let Some(r) = callback {
        return Ok(r.to_owned());
    }
    let (konst, rest) = match t.strip_prefix("const ") {
        Some(r) => (true, r.trim()),
        None => (false, t),
    };
    // Pointer levels: each `*` or trailing `[]` is one.
    let mut levels = 0;
    let mut core = rest.to_owned();
    loop {
        let c = core.trim_end().to_owned();
        if let Some(s) = c.strip_suffix("[]") {
            core = s.to_owned();
        } else if let Some(s) = c.strip_suffix('*') {
            core = s.to_owned();
        } else {
            break;
        }
        levels += 1;
    }
    let core = core.trim();
    let b = base(core).ok_or_else(|| {
        format!("the table uses C type `{ctype}`, which has no Rust form in rust_type")
    })?;
    if levels == 0 {
        return Ok(b.to_owned());
    }
    // `const` binds to the pointee: the innermost pointer is `*const`.
    let mut r = format!("{} {b}", if konst { "*const" } else { "*mut" });
    for _ in 1..levels {
        r = format!("*mut {r}");
    }
    Ok(r)
}

/// Splits a C parameter declaration into its type and name.
fn param(decl: &str) -> Result<Param, String> {
    let d = decl.trim();
    // The name is the last identifier; array brackets after it belong
    // to the type.
    let bracket = d.find('[').unwrap_or(d.len());
    let (head, arrays) = d.split_at(bracket);
    let head = head.trim_end();
    let start = head
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let name = &head[start..];
    if name.is_empty() || start == 0 {
        return Err(format!("cannot read parameter `{decl}`"));
    }
    let mut ctype = head[..start].trim().to_owned();
    if !arrays.is_empty() {
        ctype = format!("{ctype} {arrays}");
    }
    Ok(Param {
        name: name.to_owned(),
        ctype,
    })
}

/// The default body name of `MPI_X`: `x` in lower case.
fn body_name(name: &str) -> String {
    name.trim_start_matches("MPIX_")
        .trim_start_matches("MPI_")
        .to_ascii_lowercase()
}

/// Reads a table.
///
/// # Errors
/// The line number and what is wrong with it.
pub fn parse(text: &str) -> Result<Table, String> {
    let mut sections: Vec<Section> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let at = |e: String| format!("functions.txt:{}: {e}", i + 1);
        let t = line.trim_end();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(rest) = t.strip_prefix("@ ") {
            let (path, title) = rest
                .split_once(' ')
                .ok_or_else(|| at("a section is `@ chapter/module title`".into()))?;
            let (chapter, module) = path
                .split_once('/')
                .ok_or_else(|| at("a section is `@ chapter/module title`".into()))?;
            if !pending.is_empty() {
                return Err(at(
                    "a comment (`|`) before a section; put it after the `@` line".into(),
                ));
            }
            sections.push(Section {
                chapter: chapter.into(),
                module: module.into(),
                title: title.trim().into(),
                comment: Vec::new(),
                rows: Vec::new(),
            });
            continue;
        }
        let section = sections
            .last_mut()
            .ok_or_else(|| at("a row before the first section".into()))?;
        if let Some(c) = t.strip_prefix('|') {
            let c = c.strip_prefix(' ').unwrap_or(c).to_owned();
            if section.rows.is_empty() {
                section.comment.push(c);
            } else {
                pending.push(c);
            }
            continue;
        }
        let (proto, attrs) = t
            .split_once(';')
            .ok_or_else(|| at("a row is a C prototype ending in `;`, then attributes".into()))?;
        let open = proto.find('(').ok_or_else(|| at("no `(`".into()))?;
        let close = proto.rfind(')').ok_or_else(|| at("no `)`".into()))?;
        let head = proto[..open].trim();
        let (ret, name) = head
            .rsplit_once(' ')
            .ok_or_else(|| at("a prototype is `TYPE NAME(...)`".into()))?;
        if !(name.starts_with("MPI_") || name.starts_with("MPIX_")) {
            return Err(at(format!("`{name}` is not an MPI_ or MPIX_ name")));
        }
        if !names.insert(name.to_owned()) {
            return Err(at(format!("`{name}` is listed twice")));
        }
        let args = proto[open + 1..close].trim();
        let mut params = Vec::new();
        let mut variadic = false;
        if args != "void" && !args.is_empty() {
            for a in args.split(',') {
                if a.trim() == "..." {
                    variadic = true;
                } else {
                    params.push(param(a).map_err(at)?);
                }
            }
        }
        for p in &params {
            rust_type(&p.ctype).map_err(at)?;
        }
        let mut row = Row {
            proto: proto.trim().to_owned(),
            ret: ret.trim().into(),
            name: name.into(),
            params,
            variadic,
            on: None,
            fast: false,
            raw: false,
            quiet: false,
            body: format!("{}::{}", section.module, body_name(name)),
            comment: std::mem::take(&mut pending),
            lens: Vec::new(),
            addrs: Vec::new(),
            ptrouts: Vec::new(),
            laters: Vec::new(),
            inouts: Vec::new(),
            decs: Vec::new(),
        };
        for a in attrs.split_whitespace() {
            match a.split_once('=') {
                Some(("on", v)) => {
                    if !row.params.iter().any(|p| {
                        p.name == v
                            && matches!(p.ctype.as_str(), "MPI_Comm" | "MPI_Session" | "MPI_Win")
                    }) {
                        return Err(at(format!(
                            "on={v}: no MPI_Comm, MPI_Session or MPI_Win parameter of that name"
                        )));
                    }
                    row.on = Some(v.into());
                }
                Some(("body", v)) => row.body = v.into(),
                Some(("addr", v)) => row.addrs.push(v.into()),
                Some(("ptrout", v)) => row.ptrouts.push(v.into()),
                Some(("later", v)) => row.laters.push(v.into()),
                Some(("inout", v)) => row.inouts.push(v.into()),
                Some((k, v)) if k.starts_with("dec(") && k.ends_with(')') => {
                    row.decs.push((k[4..k.len() - 1].into(), v.into()));
                }
                Some((k, v)) if k.starts_with("len(") && k.ends_with(')') => {
                    row.lens.push((k[4..k.len() - 1].into(), v.into()));
                }
                None if a == "fast" => row.fast = true,
                None if a == "raw" => row.raw = true,
                None if a == "quiet" => row.quiet = true,
                _ => return Err(at(format!("unknown attribute `{a}`"))),
            }
        }
        for named in row
            .lens
            .iter()
            .map(|(p, _)| p)
            .chain(&row.addrs)
            .chain(&row.ptrouts)
            .chain(&row.laters)
            .chain(&row.inouts)
            .chain(row.decs.iter().map(|(p, _)| p))
        {
            if !row.params.iter().any(|p| p.name == *named) {
                return Err(at(format!(
                    "an attribute names `{named}`, which is not a parameter"
                )));
            }
        }
        for p in &row.params {
            arg_expr(&row, p).map_err(at)?;
        }
        if row.ret != "int" && !row.raw {
            return Err(at(
                "a function that does not return an error code must be `raw`".into(),
            ));
        }
        section.rows.push(row);
    }
    if !pending.is_empty() {
        return Err("functions.txt: a comment (`|`) after the last row".into());
    }
    Ok(Table { sections })
}

/// The line that starts the generated part of `mpi.h`.
pub const BEGIN: &str =
    "/* ---- BEGIN GENERATED by ferry-mpi-abigen from mpi/abi/functions.txt: do not edit ---- */";
/// The line that ends it.
pub const END: &str = "/* ---- END GENERATED ---- */";

fn c_comment(out: &mut String, lines: &[String]) {
    for (i, l) in lines.iter().enumerate() {
        let lead = if i == 0 { "/* " } else { " * " };
        let lead = if l.is_empty() && i > 0 { " *" } else { lead };
        out.push_str(lead);
        out.push_str(l);
        if i + 1 == lines.len() {
            out.push_str(" */");
        }
        out.push('\n');
    }
}

/// The header's generated part: every prototype under `MPI_`, then again
/// under `PMPI_` (the profiling interface), between [`BEGIN`] and [`END`].
pub fn header(t: &Table) -> String {
    let mut out = String::new();
    out.push_str(BEGIN);
    out.push('\n');
    for s in &t.sections {
        out.push('\n');
        if s.comment.is_empty() {
            let _ = writeln!(out, "/* {} */", s.title);
        } else {
            c_comment(&mut out, &s.comment);
        }
        for r in &s.rows {
            if !r.comment.is_empty() {
                out.push('\n');
                c_comment(&mut out, &r.comment);
            }
            let _ = writeln!(out, "{};", r.proto);
        }
    }
    out.push_str(
        "\n/* ---- Profiling interface: the same functions as PMPI_X ------------------ */\n",
    );
    for s in &t.sections {
        let _ = writeln!(out, "\n/* {} */", s.title);
        for r in &s.rows {
            let p = r
                .proto
                .replacen(&format!(" {}(", r.name), &format!(" P{}(", r.name), 1);
            let _ = writeln!(out, "{p};");
        }
    }
    out.push_str(END);
    out.push('\n');
    out
}

/// `old` (a header) with its generated part replaced by `block`.
///
/// # Errors
/// The header lacks the [`BEGIN`] or [`END`] line.
pub fn splice(old: &str, block: &str) -> Result<String, String> {
    let b = old.find(BEGIN).ok_or("mpi.h has no BEGIN GENERATED line")?;
    let e = old[b..]
        .find(END)
        .ok_or("mpi.h has no END GENERATED line")?
        + b;
    let e = e + END.len() + usize::from(old[e + END.len()..].starts_with('\n'));
    Ok(format!("{}{block}{}", &old[..b], &old[e..]))
}

/// The chapters' shim files, `(file stem, text)`, and `mod.rs` listing them.
///
/// # Errors
/// A C type without a Rust form.
pub fn exports(t: &Table) -> Result<Vec<(String, String)>, String> {
    let mut files: Vec<(String, String)> = Vec::new();
    for s in &t.sections {
        let idx = match files.iter().position(|(c, _)| *c == s.chapter) {
            Some(i) => i,
            None => {
                files.push((s.chapter.clone(), file_head(&s.chapter)));
                files.len() - 1
            }
        };
        let out = &mut files[idx].1;
        let _ = writeln!(out, "\n// ---- {}", s.title);
        for r in &s.rows {
            shim(out, r)?;
        }
    }
    let mut m = String::from(GENERATED_NOTE);
    m.push_str("//! The exported functions, one file per chapter of the standard.\n\n");
    // In rustfmt's order.
    let mut stems: Vec<&String> = files.iter().map(|(c, _)| c).collect();
    stems.sort();
    for c in stems {
        let _ = writeln!(m, "mod {c};");
    }
    let mut all = vec![("mod".to_owned(), m)];
    all.extend(files);
    Ok(all)
}

const GENERATED_NOTE: &str = "// Generated by ferry-mpi-abigen from mpi/abi/functions.txt: do not edit.\n// `cargo run -p ferry-mpi-abigen` writes it anew.\n\n";

fn file_head(chapter: &str) -> String {
    format!(
        "{GENERATED_NOTE}//! The shims of chapter `{chapter}`: see `crate::ffi::export!`.\n\n\
         #[allow(unused_imports)]\n\
         use crate::abi::callback::*;\n\
         #[allow(unused_imports)]\n\
         use crate::abi::MpiStatus;\n\
         #[allow(unused_imports)]\n\
         use std::ffi::{{c_char, c_double, c_int, c_void}};\n"
    )
}

fn shim(out: &mut String, r: &Row) -> Result<(), String> {
    let mut params = Vec::new();
    for p in &r.params {
        params.push(format!("{}: {}", p.name, rust_type(&p.ctype)?));
    }
    let params = params.join(", ");
    let mut args = Vec::new();
    for p in &r.params {
        args.push(arg_expr(r, p)?);
    }
    let args = args.join(", ");
    let pname = format!("P{}", r.name);
    // `body=PATH(ARGS)`: the body with leading constant arguments.
    let (path, lead) = match r.body.split_once('(') {
        Some((p, a)) => (p, format!("{}, ", a.strip_suffix(')').unwrap_or(a))),
        None => (r.body.as_str(), String::new()),
    };
    let _ = writeln!(out, "\ncrate::ffi::export! {{");
    let _ = writeln!(out, "    /// `{}`: [`crate::{path}`].", r.name);
    let on = r.on.as_ref().map(|o| format!(" [{o}]")).unwrap_or_default();
    if r.raw {
        let ret = rust_type(&r.ret)?;
        let _ = writeln!(out, "    {} / {pname} raw ({params}) -> {ret}", r.name);
    } else if r.quiet {
        let _ = writeln!(out, "    {} / {pname} quiet ({params})", r.name);
    } else {
        let _ = writeln!(out, "    {} / {pname}{on} ({params})", r.name);
    }
    if r.fast {
        let _ = writeln!(out, "    fast crate::{path}_fast({lead}{args});");
    }
    let _ = writeln!(out, "    => crate::{path}({lead}{args})\n}}");
    Ok(())
}

/// A length expression of `len(P)=E` as Rust (an `i64`): a parameter, a
/// parameter plus one, a constant of `crate::abi`, or `*NAME`, what an
/// in-out `int *` argument holds (a negative one, or a null pointer,
/// counts as no room).
fn len_expr(r: &Row, e: &str) -> Result<String, String> {
    if let Some(name) = e.strip_prefix('*') {
        if r.params
            .iter()
            .any(|p| p.name == name && p.ctype == "int *")
        {
            return Ok(format!("crate::ffi::args::room({name})?"));
        }
        return Err(format!("len(..)={e}: `{name}` is not an `int *` parameter"));
    }
    let (name, plus) = match e.split_once('+') {
        Some((n, "1")) => (n, " + 1"),
        Some(_) => return Err(format!("len(..)={e}: only NAME, NAME+1 or a constant")),
        None => (e, ""),
    };
    if let Some(p) = r.params.iter().find(|p| p.name == name) {
        return Ok(if p.ctype == "MPI_Count" {
            format!("{name}{plus}")
        } else {
            format!("i64::from({name}){plus}")
        });
    }
    if name.starts_with("MPI_")
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    {
        return Ok(format!("crate::abi::{name} as i64{plus}"));
    }
    Err(format!(
        "len(..)={e}: `{name}` is neither a parameter nor an MPI_ constant"
    ))
}

/// What a shim passes the body for parameter `p`: the value
/// itself, or a decoder of `crate::ffi::args` applied to the pointer
/// (`?` reports its failure as the call's).
///
/// # Errors
/// A pointer whose meaning the table does not give (an array without
/// `len(P)=E`, a `void *` without `addr=P` or `ptrout=P`).
pub fn arg_expr(r: &Row, p: &Param) -> Result<String, String> {
    let n = &p.name;
    let len = r
        .lens
        .iter()
        .find(|(q, _)| q == n)
        .map(|(_, e)| len_expr(r, e))
        .transpose()?;
    let t = p.ctype.as_str();
    let args = "crate::ffi::args";
    if r.addrs.contains(n) {
        return Ok(format!("{n} as usize"));
    }
    if let Some((_, dec)) = r.decs.iter().find(|(q, _)| q == n) {
        let (f, q) = dec
            .strip_suffix('?')
            .map_or((dec.as_str(), ""), |f| (f, "?"));
        return Ok(match &len {
            Some(l) => format!("{args}::{f}({n}, {l}){q}"),
            None => format!("{args}::{f}({n}){q}"),
        });
    }
    if r.laters.contains(n) {
        return Ok(format!("{args}::later({n})"));
    }
    if r.ptrouts.contains(n) {
        return Ok(format!("{args}::out({n}.cast::<usize>())"));
    }
    match t {
        "MPI_Comm_copy_attr_function *"
        | "MPI_Type_copy_attr_function *"
        | "MPI_Win_copy_attr_function *"
        | "MPI_Copy_function *" => return Ok(format!("{args}::copy_attr_fn({n})")),
        "MPI_Comm_delete_attr_function *"
        | "MPI_Type_delete_attr_function *"
        | "MPI_Win_delete_attr_function *"
        | "MPI_Delete_function *" => return Ok(format!("{args}::delete_attr_fn({n})")),
        _ => {}
    }
    let rust = rust_type(t)?;
    if !rust.starts_with('*') {
        // Values, handles, callbacks.
        return Ok(n.clone());
    }
    let konst = t.starts_with("const ");
    let array = t.ends_with(']');
    let need_len = || format!("`{t} {n}` needs len({n})=E");
    Ok(match (t, konst, array, len) {
        ("const char *" | "const char []", _, _, None) => format!("{args}::text({n})?"),
        ("char *" | "char []", _, _, Some(l)) => format!("{args}::text_out({n}, {l})"),
        ("MPI_Status *", _, _, None) if r.inouts.contains(n) => format!("{args}::out({n})"),
        ("MPI_Status *", _, _, None) => format!("{args}::status_out({n})"),
        // MPI_STATUSES_IGNORE is null: an optional out-array.
        ("MPI_Status []", _, _, Some(l)) => format!("{args}::opt_slice_out({n}, {l})"),
        // The program's data: a buffer token (`ffi::args::SendBuf`).
        ("const void *", _, _, None) => format!("{args}::send_buf({n})"),
        ("void *", _, _, None) => format!("{args}::recv_buf({n})"),
        (_, _, _, _) if t.contains("void") || t.contains("char") => {
            return Err(format!(
                "`{t} {n}`: say what it is with addr={n} or ptrout={n}"
            ));
        }
        (_, true, _, Some(l)) => format!("{args}::slice({n}, {l})?"),
        ("int [][3]", _, _, Some(l)) => format!("{args}::slice({n}, {l})?"),
        (_, false, _, Some(l)) if r.inouts.contains(n) => format!("{args}::slice_inout({n}, {l})?"),
        (_, false, _, Some(l)) => format!("{args}::slice_out({n}, {l})?"),
        (_, _, true, None) => return Err(need_len()),
        (_, true, false, None) => format!("{args}::value({n})?"),
        (_, false, false, None) => format!("{args}::out({n})"),
    })
}

/// Every file the table gives, `(path under the repository root, text)`:
/// `mpi/include/mpi.h` with its generated part, and the shim files.
///
/// # Errors
/// An unreadable input or a bad table.
pub fn generate(root: &std::path::Path) -> Result<Vec<(std::path::PathBuf, String)>, String> {
    let read = |p: &str| std::fs::read_to_string(root.join(p)).map_err(|e| format!("{p}: {e}"));
    let table = parse(&read("mpi/abi/functions.txt")?)?;
    let mut files = vec![(
        "mpi/include/mpi.h".into(),
        splice(&read("mpi/include/mpi.h")?, &header(&table))?,
    )];
    for (stem, text) in exports(&table)? {
        files.push((format!("mpi/src/ffi/exports/{stem}.rs").into(), text));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_types_map_to_their_rust_forms() {
        for (c, r) in [
            ("int", "c_int"),
            ("const int []", "*const c_int"),
            ("int *", "*mut c_int"),
            ("const void *", "*const c_void"),
            ("char ***", "*mut *mut *mut c_char"),
            ("char * []", "*mut *mut c_char"),
            ("MPI_Comm *", "*mut usize"),
            ("const MPI_Status *", "*const MpiStatus"),
            ("MPI_Count", "i64"),
            ("MPI_Aint []", "*mut isize"),
        ] {
            assert_eq!(rust_type(c).unwrap(), r, "{c}");
        }
        assert!(rust_type("MPI_Unheard_of").is_err());
    }

    #[test]
    fn a_row_reads_its_parameters_and_attributes() {
        let t = parse(
            "@ p2p/p2p Point-to-point\nint MPI_Send(const void *buf, int count, MPI_Comm comm); on=comm fast\n\
             int MPI_Pcontrol(const int level, ...);\nint MPI_Group_range_incl(int n, int ranges[][3]); body=group::x len(ranges)=n\n",
        )
        .unwrap();
        let rows = &t.sections[0].rows;
        assert_eq!(rows[0].params.len(), 3);
        assert_eq!(rows[0].params[0].ctype, "const void *");
        assert_eq!(rows[0].on.as_deref(), Some("comm"));
        assert!(rows[0].fast);
        assert_eq!(rows[0].body, "p2p::send");
        assert!(rows[1].variadic && rows[1].params.len() == 1);
        assert_eq!(rows[2].params[1].ctype, "int [][3]");
        assert_eq!(rows[2].body, "group::x");
    }

    #[test]
    fn bad_rows_are_refused_with_their_line() {
        for bad in [
            "int MPI_X(void);",
            "@ a/b T\nint MPI_X(int a); on=a",
            "@ a/b T\nint MPI_X(int a); shiny",
            "@ a/b T\ndouble MPI_X(void);",
            "@ a/b T\nint MPI_X(void);\nint MPI_X(void);",
            "@ a/b T\nint MPI_X(MPI_Frob f);",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.starts_with("functions.txt:"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_header_splice_keeps_what_is_around_it() {
        let old = format!("a\n{BEGIN}\nold\n{END}\nb\n");
        assert_eq!(splice(&old, "new\n").unwrap(), "a\nnew\nb\n");
        assert!(splice("a\n", "x").is_err());
    }
}
