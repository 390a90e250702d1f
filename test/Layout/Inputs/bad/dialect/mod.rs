pub fn rule() { crate::tools::run(); }
