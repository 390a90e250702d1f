pub mod analysis;
pub mod dialect;
pub mod ir;
pub mod tools;
