pub fn run() { crate::dialect::rule(); }
