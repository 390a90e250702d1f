// A cycle: read -> context -> read.
use super::context::create;
pub fn helper() {}
#[cfg(test)]
mod tests {
    // Test code may close a loop without being a cycle of the library.
    use crate::tools::run;
}
