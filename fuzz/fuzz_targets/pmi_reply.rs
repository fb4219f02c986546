//! Every decoder of bytes a PMI peer sends: the line parser, the client's
//! reply checks (for every request) and the server's request handling.
//! None may panic, and a parsed line that can be re-encoded must parse back
//! to the same message.
#![no_main]

use ferry_pmi::reply::{parse_reply, Request};
use ferry_pmi::server::PmiJob;
use ferry_pmi::wire::Message;
use libfuzzer_sys::fuzz_target;

const REQUESTS: [Request; 9] = [
    Request::Init,
    Request::GetMaxes,
    Request::GetAppnum,
    Request::GetUniverseSize,
    Request::GetMyKvsname,
    Request::Put,
    Request::Get,
    Request::Barrier,
    Request::Finalize,
];

fuzz_target!(|data: &[u8]| {
    if let Ok(msg) = Message::parse(data) {
        if let Ok(line) = msg.encode() {
            assert_eq!(Message::parse(line.as_bytes()).as_ref(), Ok(&msg));
        }
    }
    for req in REQUESTS {
        let _ = parse_reply(req, data);
    }
    // The server sees the same bytes as a request, line by line.
    let mut job = PmiJob::new("fuzz", 2);
    for line in data.split_inclusive(|&b| b == b'\n') {
        let _ = job.handle_line(0, line);
        let _ = job.handle_line(1, line);
    }
});
