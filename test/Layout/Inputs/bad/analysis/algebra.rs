use melior::ir::Module;
use crate::ir::read::helper;
