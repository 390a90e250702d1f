pub mod read;
pub mod context;
