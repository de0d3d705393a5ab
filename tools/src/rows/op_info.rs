//! The name and class of a CUDA op id, as the catalogue gives them.

use ingero_store::{CudaApi, OpClass};

/// Name and class of a CUDA op id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpInfo {
    /// Catalogue id.
    pub id: u16,
    /// Function name.
    pub name: String,
    /// Runtime or driver library.
    pub api: CudaApi,
    /// What the function does.
    pub class: OpClass,
}
