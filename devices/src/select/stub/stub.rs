// The body of every `stub/` module, included after it names `FEATURE` and
// `NEEDS`: `compiled` and `node_device` both return
// `SetupError::FeatureNotCompiled` for that feature.

use ferry_core::{Bootstrap, Rank};

use super::node::NodeDevice;
use crate::error::{Error, Result, SetupError};

fn missing() -> Error {
    SetupError::FeatureNotCompiled {
        device: FEATURE,
        feature: FEATURE,
        needs: NEEDS,
    }
    .into()
}

/// This build lacks the device.
pub(super) fn compiled() -> Result<()> {
    Err(missing())
}

/// Always [`compiled`]'s error.
pub(super) fn node_device(_boot: &mut dyn Bootstrap, _peers: &[Rank]) -> Result<NodeDevice> {
    Err(missing())
}
