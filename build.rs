//! Builds the dialects from their ODS (`dialects/*.td`):
//!
//! - runs Debian LLVM 22's `mlir-tblgen` on every dialect (dialect, op,
//!   type and enum declarations and definitions) and compiles the generated
//!   C++ with the `cc` crate, one translation unit per dialect plus one for
//!   the shared enums. The only other C++ is the registration of each
//!   dialect for the C API (`mlirGetDialectHandle__model__`, `__dist__`,
//!   `__plan__`), written here from one template;
//! - reads the same records with TableGen and emits `blueprint.irdl.mlir`
//!   (the dialects as IRDL, a product: stock `mlir-opt --irdl-file` reads
//!   Blueprint IR in the generic form with it) and `ods_tables.rs` (every
//!   op's operands, results, attributes and class, the op-kind enum, and
//!   one Rust enum per ODS enum), so the ODS stays the one source of truth.
//!
//! Only the constraint classes Blueprint's ODS uses are understood; anything
//! else is a build error naming the op and the constraint, never a silent
//! `irdl.any`.

use std::{
    env,
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use tblgen::{record::Record, TableGenParser};

/// (dialect name, C++ prefix, ODS file).
const DIALECTS: &[(&str, &str, &str)] =
    &[("model", "Model", "ModelOps.td"), ("dist", "Dist", "DistOps.td"), ("plan", "Plan", "PlanOps.td")];

fn main() {
    if let Err(message) = run() {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let prefix = env::var("TABLEGEN_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let include = format!("{prefix}/include");
    let dialects_dir = manifest.join("dialects");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", manifest.join("src/tools/capi/pass_registration.cpp").display());
    println!("cargo:rerun-if-changed={}", manifest.join("src/tools/capi/print.cpp").display());
    println!("cargo:rerun-if-changed={}", manifest.join("src/tools/capi/build.cpp").display());
    println!("cargo:rerun-if-changed={}", manifest.join("src/tools/capi/verify.cpp").display());
    println!("cargo:rerun-if-changed={}", manifest.join("src/tools/capi/read.cpp").display());
    println!("cargo:rerun-if-changed={}", manifest.join("src/tools/capi/parse.cpp").display());
    println!("cargo:rerun-if-changed={}", manifest.join("src/tools/capi/opt.cpp").display());
    println!("cargo:rerun-if-env-changed=TABLEGEN_220_PREFIX");
    println!("cargo:rerun-if-changed={}", dialects_dir.join("BlueprintBase.td").display());
    // `melior::dialect!` (typed builders) reads the ODS from here.
    println!("cargo:rustc-env=BLUEPRINT_DIALECTS_DIR={}", dialects_dir.display());

    compile_dialects(&prefix, &dialects_dir, &out_dir)?;

    let mut dialects = Vec::new();
    for (name, _, file) in DIALECTS {
        let path = dialects_dir.join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        dialects.push(read_dialect(name, &path, &dialects_dir, &include)?);
    }
    let enums = read_enums(&dialects_dir.join("BlueprintBase.td"), &dialects_dir, &include)?;

    fs::write(out_dir.join("blueprint.irdl.mlir"), emit_irdl(&dialects)).map_err(|e| format!("writing IRDL: {e}"))?;
    fs::write(out_dir.join("ods_tables.rs"), emit_tables(&dialects, &enums)).map_err(|e| format!("writing ODS tables: {e}"))?;
    for dialect in &dialects {
        let file = out_dir.join(format!("ods_builders_{}.rs", dialect.name));
        fs::write(file, emit_builders(dialect)).map_err(|e| format!("writing ODS builders: {e}"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// C++ from the ODS
// ---------------------------------------------------------------------------

/// Headers every generated translation unit needs before the `.inc` files.
const CPP_PRELUDE: &str = "\
#include \"mlir/Bytecode/BytecodeOpInterface.h\"
#include \"mlir/CAPI/Registration.h\"
#include \"mlir/IR/Builders.h\"
#include \"mlir/IR/BuiltinAttributes.h\"
#include \"mlir/IR/BuiltinTypes.h\"
#include \"mlir/IR/Dialect.h\"
#include \"mlir/IR/DialectImplementation.h\"
#include \"mlir/IR/OpDefinition.h\"
#include \"mlir/IR/OpImplementation.h\"
#include \"mlir/IR/SymbolTable.h\"
#include \"mlir/Interfaces/ControlFlowInterfaces.h\"
#include \"mlir/Interfaces/InferTypeOpInterface.h\"
#include \"mlir/Interfaces/SideEffectInterfaces.h\"
#include \"llvm/ADT/StringExtras.h\"
#include \"llvm/ADT/TypeSwitch.h\"
";

fn tblgen(prefix: &str, dialects_dir: &Path, input: &Path, args: &[&str], output: &Path) -> Result<(), String> {
    let tool = format!("{prefix}/bin/mlir-tblgen");
    let status = Command::new(&tool)
        .args(args)
        .arg(format!("-I{prefix}/include"))
        .arg(format!("-I{}", dialects_dir.display()))
        .arg(input)
        .arg("-o")
        .arg(output)
        .status()
        .map_err(|e| format!("cannot run {tool}: {e} (run tools/setup.sh)"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{tool} {} {} failed", args.join(" "), input.display()))
    }
}

/// Generates and compiles the C++ of every dialect into one static library.
fn compile_dialects(prefix: &str, dialects_dir: &Path, out_dir: &Path) -> Result<(), String> {
    let gen = out_dir.join("cpp");
    fs::create_dir_all(&gen).map_err(|e| e.to_string())?;
    let base = dialects_dir.join("BlueprintBase.td");
    tblgen(prefix, dialects_dir, &base, &["-gen-enum-decls"], &gen.join("BlueprintEnums.h.inc"))?;
    tblgen(prefix, dialects_dir, &base, &["-gen-enum-defs"], &gen.join("BlueprintEnums.cpp.inc"))?;
    let mut units = vec![gen.join("BlueprintEnums.cpp")];
    fs::write(
        &units[0],
        format!(
            "// Generated by build.rs. Do not edit.\n{CPP_PRELUDE}#include \"BlueprintEnums.h.inc\"\n#include \"BlueprintEnums.cpp.inc\"\n"
        ),
    )
    .map_err(|e| e.to_string())?;

    for (name, cpp, file) in DIALECTS {
        let td = dialects_dir.join(file);
        let dialect_flag = format!("-dialect={name}");
        let typedef_flag = format!("-typedefs-dialect={name}");
        let outputs = [
            (vec!["-gen-dialect-decls", dialect_flag.as_str()], format!("{cpp}Dialect.h.inc")),
            (vec!["-gen-dialect-defs", dialect_flag.as_str()], format!("{cpp}Dialect.cpp.inc")),
            (vec!["-gen-op-decls"], format!("{cpp}Ops.h.inc")),
            (vec!["-gen-op-defs"], format!("{cpp}Ops.cpp.inc")),
            (vec!["-gen-typedef-decls", typedef_flag.as_str()], format!("{cpp}Types.h.inc")),
            (vec!["-gen-typedef-defs", typedef_flag.as_str()], format!("{cpp}Types.cpp.inc")),
        ];
        for (args, output) in &outputs {
            tblgen(prefix, dialects_dir, &td, args, &gen.join(output))?;
        }
        patch_segment_size_message(&gen.join(format!("{cpp}Ops.cpp.inc")))?;
        let unit = gen.join(format!("{cpp}Dialect.cpp"));
        fs::write(&unit, dialect_unit(name, cpp)).map_err(|e| e.to_string())?;
        units.push(unit);
    }

    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .include(format!("{prefix}/include"))
        .include(&gen)
        .define("_GNU_SOURCE", None)
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .flag("-fno-exceptions")
        // Parsing, verifying and printing run in this code: always optimize.
        .opt_level(2)
        .debug(false)
        .warnings(false)
        .flag("-w")
        .files(&units)
        // Pass registration by name for the C API and the mlir-opt plugin.
        .file(manifest_dir().join("src/tools/capi/pass_registration.cpp"))
        // Buffered printing (the C API's printer calls back per token).
        .file(manifest_dir().join("src/tools/capi/print.cpp"))
        // Creating ops from the typed builders without the C API's lookups.
        .file(manifest_dir().join("src/tools/capi/build.cpp"))
        // Verifying only the layer a pass appended.
        .file(manifest_dir().join("src/tools/capi/verify.cpp"))
        // An op's attributes as one array.
        .file(manifest_dir().join("src/tools/capi/read.cpp"))
        // Parsing without the verifier, which Blueprint runs after its bounds.
        .file(manifest_dir().join("src/tools/capi/parse.cpp"))
        // mlir-opt's IR printing filters, pass listing and dumps (blueprint-opt).
        .file(manifest_dir().join("src/tools/capi/opt.cpp"));
    build.try_compile("blueprint_dialects").map_err(|e| format!("compiling the dialects' C++: {e}"))?;
    Ok(())
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
}

/// mlir-tblgen 22 drops a quote in the `operandSegmentSizes` length error
/// of ops whose inherent attributes are not properties, which leaves C++
/// that does not compile; put the quote back.
fn patch_segment_size_message(path: &Path) -> Result<(), String> {
    const BROKEN: &str = "\"'operandSegmentSizes' attribute for specifying";
    const FIXED: &str = "\" \"'operandSegmentSizes' attribute for specifying";
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if text.contains(BROKEN) {
        fs::write(path, text.replace(BROKEN, FIXED)).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// The translation unit of one dialect: its generated declarations and
/// definitions, the dialect's `initialize`, and its C API registration.
fn dialect_unit(name: &str, cpp: &str) -> String {
    let namespace = format!("blueprint::{name}");
    format!(
        "// Generated by build.rs from dialects/{cpp}Ops.td. Do not edit.\n\
         {CPP_PRELUDE}\
         #include \"BlueprintEnums.h.inc\"\n\
         #include \"{cpp}Dialect.h.inc\"\n\
         #define GET_TYPEDEF_CLASSES\n#include \"{cpp}Types.h.inc\"\n\
         #define GET_OP_CLASSES\n#include \"{cpp}Ops.h.inc\"\n\n\
         #include \"{cpp}Dialect.cpp.inc\"\n\
         #define GET_TYPEDEF_CLASSES\n#include \"{cpp}Types.cpp.inc\"\n\
         #define GET_OP_CLASSES\n#include \"{cpp}Ops.cpp.inc\"\n\n\
         void {namespace}::{cpp}Dialect::initialize() {{\n\
         \x20 addOperations<\n#define GET_OP_LIST\n#include \"{cpp}Ops.cpp.inc\"\n  >();\n\
         #define GET_TYPEDEF_LIST\n\
         \x20 addTypes<\n#include \"{cpp}Types.cpp.inc\"\n  >();\n\
         }}\n\n\
         extern \"C\" {{\nMLIR_DECLARE_CAPI_DIALECT_REGISTRATION({cpp}, {name});\n}}\n\
         MLIR_DEFINE_CAPI_DIALECT_REGISTRATION({cpp}, {name}, {namespace}::{cpp}Dialect)\n"
    )
}

// ---------------------------------------------------------------------------
// Reading the records
// ---------------------------------------------------------------------------

/// IRDL constraint of one operand or result type.
#[derive(Clone, Debug)]
enum TypeConstraint {
    Any,
    Is(String),
    Base(String),
    AnyOf(Vec<TypeConstraint>),
}

/// An ODS enum: its C++/Rust name, its cases (spelling, value) and whether
/// it is a set of bit flags.
#[derive(Clone, Debug, PartialEq)]
struct EnumDef {
    name: String,
    summary: String,
    cases: Vec<(String, i64)>,
    bits: bool,
}

/// What Rust needs to know about an attribute beyond its IRDL constraint.
#[derive(Clone, Debug, PartialEq)]
enum AttrKind {
    String,
    Integer,
    NonNegativeInteger,
    PositiveInteger,
    PowerOfTwoInteger,
    Float,
    DenseI64Array,
    SymbolRef,
    Array,
    Unit,
    IntegerOrSymbolRef,
    Enum(EnumDef),
}

struct Operand {
    name: String,
    variadicity: &'static str,
    constraint: TypeConstraint,
}

struct Attribute {
    name: String,
    optional: bool,
    kind: AttrKind,
}

struct OpDef {
    /// `Dist_AllReduceStart` -> `DistAllReduceStart`.
    variant: String,
    dialect: String,
    mnemonic: String,
    summary: String,
    operands: Vec<Operand>,
    results: Vec<Operand>,
    attributes: Vec<Attribute>,
    /// ODS base classes the Rust side asks about.
    collective: bool,
    communication: bool,
    task: bool,
    copy: bool,
    asynchronous: bool,
    /// Result types follow from the operands (`AllTypesMatch`).
    inferred_results: bool,
    /// `AttrSizedOperandSegments`.
    operand_segments: bool,
    /// Region names (ops with regions).
    regions: Vec<String>,
}

struct TypeDefInfo {
    dialect: String,
    mnemonic: String,
}

struct DialectDef {
    name: String,
    summary: String,
    types: Vec<TypeDefInfo>,
    ops: Vec<OpDef>,
}

fn parse(path: &Path, dialects_dir: &Path, include: &str) -> Result<tblgen::RecordKeeper<'static>, String> {
    TableGenParser::new()
        .add_source_file(&path.to_string_lossy())
        .add_include_directory(include)
        .add_include_directory(&dialects_dir.to_string_lossy())
        .parse()
        .map_err(|e| format!("{}: TableGen parse failed: {e}", path.display()))
}

fn read_dialect(name: &str, path: &Path, dialects_dir: &Path, include: &str) -> Result<DialectDef, String> {
    let keeper = parse(path, dialects_dir, include)?;
    let file_name = path.file_name().unwrap_or_default().to_string_lossy().to_string();
    let mut dialect = keeper
        .all_derived_definitions("Dialect")
        .find(|def| def.str_value("name").ok() == Some(name))
        .map(|def| DialectDef {
            name: name.to_string(),
            summary: def.str_value("summary").unwrap_or("").to_string(),
            types: Vec::new(),
            ops: Vec::new(),
        })
        .ok_or_else(|| format!("{file_name}: no dialect named '{name}'"))?;

    for def in keeper.all_derived_definitions("TypeDef") {
        let info = typedef_info(def)?;
        if info.dialect == dialect.name {
            dialect.types.push(info);
        }
    }
    for def in keeper.all_derived_definitions("Op") {
        let op_dialect = def.def_value("opDialect").and_then(|d| d.str_value("name").map(str::to_string)).map_err(|e| e.to_string())?;
        if op_dialect != dialect.name {
            continue;
        }
        dialect.ops.push(read_op(def, &op_dialect)?);
    }
    dialect.ops.sort_by(|a, b| a.mnemonic.cmp(&b.mnemonic));
    dialect.types.sort_by(|a, b| a.mnemonic.cmp(&b.mnemonic));
    Ok(dialect)
}

fn read_enums(path: &Path, dialects_dir: &Path, include: &str) -> Result<Vec<EnumDef>, String> {
    let keeper = parse(path, dialects_dir, include)?;
    let mut enums: Vec<EnumDef> = keeper.all_derived_definitions("EnumAttrInfo").map(enum_def).collect::<Result<_, _>>()?;
    enums.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(enums)
}

fn enum_def(record: Record) -> Result<EnumDef, String> {
    let name = record.str_value("className").map_err(|e| e.to_string())?.to_string();
    let cases = record
        .list_of_defs_value("enumerants")
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|case| {
            let spelling = case.str_value("str").map_err(|e| e.to_string())?.to_string();
            let value = case.int_value("value").map_err(|e| e.to_string())?;
            Ok((spelling, value))
        })
        .collect::<Result<_, String>>()?;
    Ok(EnumDef {
        name,
        summary: record.str_value("summary").unwrap_or("").trim().to_string(),
        cases,
        bits: record.subclass_of("BitEnumAttr"),
    })
}

fn typedef_info(def: Record) -> Result<TypeDefInfo, String> {
    let dialect = def.def_value("dialect").and_then(|d| d.str_value("name").map(str::to_string)).map_err(|e| e.to_string())?;
    let mnemonic = def.str_value("mnemonic").map_err(|e| e.to_string())?.to_string();
    Ok(TypeDefInfo { dialect, mnemonic })
}

fn read_op(def: Record, dialect: &str) -> Result<OpDef, String> {
    let mnemonic = def.str_value("opName").map_err(|e| e.to_string())?.to_string();
    let op_name = format!("{dialect}.{mnemonic}");
    let record_name = def.name().map_err(|e| format!("{op_name}: {e}"))?;
    let variant: String = record_name.strip_suffix("Op").unwrap_or(record_name).replace('_', "");
    let summary = def.str_value("summary").unwrap_or("").trim().to_string();
    let mut operands = Vec::new();
    let mut attributes = Vec::new();
    let arguments = def.dag_value("arguments").map_err(|e| e.to_string())?;
    for (name, init) in arguments.args() {
        let name = name.ok_or_else(|| format!("{op_name}: unnamed argument"))?.to_string();
        let record: Record = init.try_into().map_err(|e| format!("{op_name}: argument {name} is not a def: {e:?}"))?;
        if record.subclass_of("Attr") {
            attributes.push(read_attribute(record, &name, &op_name)?);
        } else {
            operands.push(read_value(record, &name, &op_name)?);
        }
    }
    let mut results = Vec::new();
    for (name, init) in def.dag_value("results").map_err(|e| e.to_string())?.args() {
        let name = name.ok_or_else(|| format!("{op_name}: unnamed result"))?.to_string();
        let record: Record = init.try_into().map_err(|e| format!("{op_name}: result {name} is not a def: {e:?}"))?;
        results.push(read_value(record, &name, &op_name)?);
    }
    let asynchronous = results.iter().any(|r| matches!(&r.constraint, TypeConstraint::Base(b) if b == "@dist::@async_handle"));
    let traits = def.list_of_defs_value("traits").map_err(|e| format!("{op_name}: traits: {e}"))?;
    let inferred_results = traits.iter().any(|t| t.subclass_of("AllTypesMatch"));
    let operand_segments = traits.iter().any(|t| t.name().ok() == Some("AttrSizedOperandSegments"));
    let regions = def
        .dag_value("regions")
        .map_err(|e| e.to_string())?
        .args()
        .map(|(name, _)| name.map(str::to_string).ok_or_else(|| format!("{op_name}: unnamed region")))
        .collect::<Result<_, _>>()?;
    Ok(OpDef {
        variant,
        dialect: dialect.to_string(),
        mnemonic,
        summary,
        operands,
        results,
        attributes,
        collective: def.subclass_of("Dist_CollectiveOp"),
        communication: def.subclass_of("Dist_CommunicationOp"),
        task: def.subclass_of("Dist_TaskOp") || def.subclass_of("Plan_TaskOp"),
        copy: def.subclass_of("Dist_CopyOp"),
        asynchronous,
        inferred_results,
        operand_segments,
        regions,
    })
}

fn read_value(record: Record, name: &str, op: &str) -> Result<Operand, String> {
    let (variadicity, base) = if record.subclass_of("Variadic") {
        ("variadic", record.def_value("baseType").map_err(|e| e.to_string())?)
    } else if record.subclass_of("Optional") {
        ("optional", record.def_value("baseType").map_err(|e| e.to_string())?)
    } else {
        ("single", record)
    };
    Ok(Operand { name: name.to_string(), variadicity, constraint: type_constraint(base, name, op)? })
}

fn type_constraint(record: Record, name: &str, op: &str) -> Result<TypeConstraint, String> {
    if record.subclass_of("TypeDef") {
        let info = typedef_info(record)?;
        return Ok(TypeConstraint::Base(format!("@{}::@{}", info.dialect, info.mnemonic)));
    }
    let def_name = record.name().unwrap_or("");
    Ok(match def_name {
        "AnyType" => TypeConstraint::Any,
        "Index" => TypeConstraint::Is("index".into()),
        "AnyRankedTensor" => TypeConstraint::Base("\"!builtin.tensor\"".into()),
        "AnyTensor" => TypeConstraint::AnyOf(vec![
            TypeConstraint::Base("\"!builtin.tensor\"".into()),
            TypeConstraint::Base("\"!builtin.unranked_tensor\"".into()),
        ]),
        other => return Err(format!("{op}: operand/result {name}: unsupported type constraint '{other}'")),
    })
}

fn read_attribute(record: Record, name: &str, op: &str) -> Result<Attribute, String> {
    let (optional, base) =
        if record.subclass_of("OptionalAttr") { (true, record.def_value("baseAttr").map_err(|e| e.to_string())?) } else { (false, record) };
    let kind = attr_kind(base, name, op)?;
    // A unit attribute is a flag: absent means false, as in MLIR.
    let optional = optional || kind == AttrKind::Unit;
    Ok(Attribute { name: name.to_string(), optional, kind })
}

fn attr_kind(record: Record, name: &str, op: &str) -> Result<AttrKind, String> {
    if record.subclass_of("EnumAttrInfo") {
        return Ok(AttrKind::Enum(enum_def(record)?));
    }
    if record.subclass_of("ConfinedAttr") {
        let base = attr_kind(record.def_value("baseAttr").map_err(|e| e.to_string())?, name, op)?;
        if base != AttrKind::Integer {
            return Err(format!("{op}: attribute {name}: only integer attributes may be confined"));
        }
        let constraints = record.list_of_defs_value("attrConstraints").map_err(|e| e.to_string())?;
        let names: Vec<&str> = constraints.iter().map(|c| c.name().unwrap_or("")).collect();
        return match names.as_slice() {
            ["IntNonNegative"] => Ok(AttrKind::NonNegativeInteger),
            ["IntPositive"] => Ok(AttrKind::PositiveInteger),
            ["IntPositivePowerOf2"] => Ok(AttrKind::PowerOfTwoInteger),
            other => Err(format!("{op}: attribute {name}: unsupported confinement {other:?}")),
        };
    }
    if record.subclass_of("AnyAttrOf") {
        let allowed = record.list_of_defs_value("allowedAttributes").map_err(|e| e.to_string())?;
        let names: Vec<&str> = allowed.iter().map(|c| c.name().unwrap_or("")).collect();
        return match names.as_slice() {
            ["I64Attr", "FlatSymbolRefAttr"] => Ok(AttrKind::IntegerOrSymbolRef),
            other => Err(format!("{op}: attribute {name}: unsupported AnyAttrOf {other:?}")),
        };
    }
    if record.subclass_of("TypedArrayAttrBase") {
        return Ok(AttrKind::Array);
    }
    let def_name = record.name().unwrap_or("");
    Ok(match def_name {
        "StrAttr" | "SymbolNameAttr" => AttrKind::String,
        "I64Attr" => AttrKind::Integer,
        "F64Attr" => AttrKind::Float,
        "DenseI64ArrayAttr" => AttrKind::DenseI64Array,
        "FlatSymbolRefAttr" => AttrKind::SymbolRef,
        "UnitAttr" => AttrKind::Unit,
        "ArrayAttr" => AttrKind::Array,
        other => return Err(format!("{op}: attribute {name}: unsupported attribute constraint '{other}'")),
    })
}

// ---------------------------------------------------------------------------
// IRDL emission
// ---------------------------------------------------------------------------

struct IrdlBuilder {
    text: String,
    next: usize,
}

impl IrdlBuilder {
    fn value(&mut self, body: String) -> String {
        let name = format!("%{}", self.next);
        self.next += 1;
        let _ = writeln!(self.text, "      {name} = {body}");
        name
    }

    fn type_constraint(&mut self, constraint: &TypeConstraint) -> String {
        match constraint {
            TypeConstraint::Any => self.value("irdl.any".into()),
            TypeConstraint::Is(ty) => self.value(format!("irdl.is {ty}")),
            TypeConstraint::Base(base) => self.value(format!("irdl.base {base}")),
            TypeConstraint::AnyOf(items) => {
                let names: Vec<String> = items.iter().map(|c| self.type_constraint(c)).collect();
                self.value(format!("irdl.any_of({})", names.join(", ")))
            }
        }
    }

    fn attr_constraint(&mut self, kind: &AttrKind) -> String {
        let base = |s: &str| format!("irdl.base \"#builtin.{s}\"");
        match kind {
            AttrKind::String => self.value(base("string")),
            AttrKind::Integer | AttrKind::NonNegativeInteger | AttrKind::PositiveInteger | AttrKind::PowerOfTwoInteger => {
                self.value(base("integer"))
            }
            AttrKind::Float => self.value(base("float")),
            AttrKind::DenseI64Array => self.value(base("dense_array")),
            AttrKind::SymbolRef => self.value(base("symbol_ref")),
            AttrKind::Array => self.value(base("array")),
            AttrKind::Unit => self.value(base("unit")),
            // A set of flags is any integer; Rust checks the bits.
            AttrKind::Enum(e) if e.bits => self.value(base("integer")),
            AttrKind::Enum(e) => {
                let names: Vec<String> = e.cases.iter().map(|(_, value)| self.value(format!("irdl.is {value} : i32"))).collect();
                self.value(format!("irdl.any_of({})", names.join(", ")))
            }
            AttrKind::IntegerOrSymbolRef => {
                let a = self.value(base("integer"));
                let b = self.value(base("symbol_ref"));
                self.value(format!("irdl.any_of({a}, {b})"))
            }
        }
    }
}

fn emit_irdl(dialects: &[DialectDef]) -> String {
    let mut out = String::from(
        "// Generated by Blueprint's build.rs from dialects/*.td. Do not edit.\n\
         // Load with `mlir-opt --irdl-file=<this file>`; it reads Blueprint IR in the generic form.\n",
    );
    for dialect in dialects {
        let _ = writeln!(out, "irdl.dialect @{} {{", dialect.name);
        for ty in &dialect.types {
            let _ = writeln!(out, "  irdl.type @{}", ty.mnemonic);
        }
        for op in &dialect.ops {
            let mut b = IrdlBuilder { text: String::new(), next: 0 };
            let operands: Vec<String> =
                op.operands.iter().map(|o| format!("{}: {}{}", o.name, variadic_prefix(o), b.type_constraint(&o.constraint))).collect();
            let results: Vec<String> =
                op.results.iter().map(|o| format!("{}: {}{}", o.name, variadic_prefix(o), b.type_constraint(&o.constraint))).collect();
            // IRDL has no optional attributes: optional ones are checked in Rust.
            let attributes: Vec<String> =
                op.attributes.iter().filter(|a| !a.optional).map(|a| format!("\"{}\" = {}", a.name, b.attr_constraint(&a.kind))).collect();
            let regions: Vec<String> =
                op.regions.iter().map(|name| format!("{name}: {}", b.value("irdl.region with size 1".into()))).collect();
            let _ = writeln!(out, "  irdl.operation @{} {{", op.mnemonic);
            out.push_str(&b.text);
            if !regions.is_empty() {
                let _ = writeln!(out, "      irdl.regions({})", regions.join(", "));
            }
            if !operands.is_empty() {
                let _ = writeln!(out, "      irdl.operands({})", operands.join(", "));
            }
            if !results.is_empty() {
                let _ = writeln!(out, "      irdl.results({})", results.join(", "));
            }
            if !attributes.is_empty() {
                let _ = writeln!(out, "      irdl.attributes {{{}}}", attributes.join(", "));
            }
            let _ = writeln!(out, "  }}");
        }
        let _ = writeln!(out, "}}");
    }
    out
}

fn variadic_prefix(operand: &Operand) -> &'static str {
    match operand.variadicity {
        "variadic" => "variadic ",
        "optional" => "optional ",
        _ => "",
    }
}

// ---------------------------------------------------------------------------
// Rust table emission
// ---------------------------------------------------------------------------

fn camel(spelling: &str) -> String {
    spelling
        .split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |c| c.to_ascii_uppercase().to_string() + chars.as_str())
        })
        .collect()
}

fn emit_tables(dialects: &[DialectDef], enums: &[EnumDef]) -> String {
    let mut out = String::from("// Generated by build.rs from dialects/*.td. Do not edit.\n\n");
    emit_enums(&mut out, enums);
    emit_op_kinds(&mut out, dialects);
    out.push_str("pub static DIALECTS: &[DialectSpec] = &[\n");
    for dialect in dialects {
        let _ = writeln!(out, "    DialectSpec {{ name: {:?}, summary: {:?}, ops: &[", dialect.name, dialect.summary);
        for op in &dialect.ops {
            let _ = writeln!(
                out,
                "        OpSpec {{ name: \"{}.{}\", kind: OpKind::{}, summary: {:?}, operands: &[{}], results: &[{}], attributes: &[",
                op.dialect,
                op.mnemonic,
                op.variant,
                op.summary,
                op.operands.iter().map(value_spec).collect::<Vec<_>>().join(", "),
                op.results.iter().map(value_spec).collect::<Vec<_>>().join(", "),
            );
            for attr in &op.attributes {
                let _ = writeln!(
                    out,
                    "            AttrSpec {{ name: {:?}, optional: {}, kind: {} }},",
                    attr.name,
                    attr.optional,
                    kind_expr(&attr.kind)
                );
            }
            out.push_str("        ] },\n");
        }
        out.push_str("    ] },\n");
    }
    out.push_str("];\n");
    out
}

/// One Rust enum per ODS `I32EnumAttr` (spellings and values from the ODS),
/// and flag constants for bit enums.
fn emit_enums(out: &mut String, enums: &[EnumDef]) {
    for e in enums {
        let name = &e.name;
        if e.bits {
            let _ = writeln!(out, "/// ODS bit enum `{name}` ({}): flag values by spelling.", e.summary);
            let _ = writeln!(out, "pub const {}_FLAGS: &[(&str, i64)] = &[", name.to_uppercase());
            for (spelling, value) in &e.cases {
                if *value != 0 {
                    let _ = writeln!(out, "    ({spelling:?}, {value}),");
                }
            }
            out.push_str("];\n\n");
            continue;
        }
        let _ = writeln!(out, "/// ODS enum `{name}`: {}.", e.summary);
        out.push_str("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\n");
        let _ = writeln!(out, "pub enum {name} {{");
        for (spelling, value) in &e.cases {
            let _ = writeln!(out, "    /// `{spelling}`\n    {} = {value},", camel(spelling));
        }
        out.push_str("}\n\n");
        let _ = writeln!(out, "impl {name} {{");
        let _ = writeln!(out, "    /// Every case, in value order.");
        let _ = writeln!(
            out,
            "    pub const ALL: [Self; {}] = [{}];",
            e.cases.len(),
            e.cases.iter().map(|(s, _)| format!("Self::{}", camel(s))).collect::<Vec<_>>().join(", ")
        );
        out.push_str("    /// The case's spelling in the custom form (and in specs).\n    #[must_use]\n    pub const fn name(self) -> &'static str {\n        match self {\n");
        for (spelling, _) in &e.cases {
            let _ = writeln!(out, "            Self::{} => {spelling:?},", camel(spelling));
        }
        out.push_str("        }\n    }\n\n");
        out.push_str("    /// The case's value in the generic form.\n    #[must_use]\n    pub const fn value(self) -> i64 {\n        self as i64\n    }\n\n");
        out.push_str("    #[must_use]\n    pub fn from_value(value: i64) -> Option<Self> {\n        Self::ALL.into_iter().find(|c| c.value() == value)\n    }\n\n");
        out.push_str("    #[must_use]\n    pub fn from_name(name: &str) -> Option<Self> {\n        Self::ALL.into_iter().find(|c| c.name() == name)\n    }\n}\n\n");
        let _ = writeln!(out, "impl std::fmt::Display for {name} {{\n    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{\n        f.write_str(self.name())\n    }}\n}}\n");
        let _ = writeln!(out, "impl OdsEnum for {name} {{\n    fn from_value(value: i64) -> Option<Self> {{\n        Self::from_value(value)\n    }}\n\n    fn name(self) -> &'static str {{\n        self.name()\n    }}\n}}\n");
        let _ = writeln!(
            out,
            "/// The ODS description of `{name}` for the verifiers.\npub static {}_ENUM: EnumSpec = EnumSpec {{ name: {name:?}, cases: &[{}], bits: false }};\n",
            name.to_uppercase(),
            e.cases.iter().map(|(s, v)| format!("({s:?}, {v})")).collect::<Vec<_>>().join(", ")
        );
    }
}

/// The op-kind enum: one variant per op, with the classes the ODS puts it
/// in and its sync/async pair, so matches over op kinds are exhaustive.
fn emit_op_kinds(out: &mut String, dialects: &[DialectDef]) {
    let ops: Vec<&OpDef> = dialects.iter().flat_map(|d| &d.ops).collect();
    out.push_str("/// Every op of Blueprint's dialects.\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\npub enum OpKind {\n");
    for op in &ops {
        let _ = writeln!(out, "    /// `{}.{}`: {}\n    {},", op.dialect, op.mnemonic, op.summary, op.variant);
    }
    out.push_str("}\n\nimpl OpKind {\n    /// Every op kind, in table order.\n");
    let _ = writeln!(
        out,
        "    pub const ALL: [Self; {}] = [{}];\n",
        ops.len(),
        ops.iter().map(|op| format!("Self::{}", op.variant)).collect::<Vec<_>>().join(", ")
    );
    out.push_str("    /// The full op name, `dialect.mnemonic`.\n    #[must_use]\n    pub const fn name(self) -> &'static str {\n        match self {\n");
    for op in &ops {
        let _ = writeln!(out, "            Self::{} => \"{}.{}\",", op.variant, op.dialect, op.mnemonic);
    }
    // A string `match` compiles to a chain of comparisons; every rule asks
    // for the kind of every op, so look names up in a hash map instead.
    out.push_str("        }\n    }\n\n    /// The kind of an op name.\n    #[must_use]\n    pub fn from_name(name: &str) -> Option<Self> {\n        static BY_NAME: std::sync::OnceLock<std::collections::HashMap<&'static str, OpKind>> = std::sync::OnceLock::new();\n        BY_NAME.get_or_init(|| Self::ALL.iter().map(|k| (k.name(), *k)).collect()).get(name).copied()\n    }\n\n");
    let flag = |out: &mut String, name: &str, doc: &str, pick: &dyn Fn(&OpDef) -> bool| {
        let members: Vec<String> = ops.iter().filter(|op| pick(op)).map(|op| format!("Self::{}", op.variant)).collect();
        let _ = writeln!(out, "    /// {doc}\n    #[must_use]\n    pub const fn {name}(self) -> bool {{");
        if members.is_empty() {
            out.push_str("        false\n    }\n\n");
        } else {
            let _ = writeln!(out, "        matches!(self, {})\n    }}\n", members.join(" | "));
        }
    };
    flag(out, "is_collective", "One of the five collectives (ODS class `Dist_CollectiveOp`), sync or async.", &|op| op.collective);
    flag(out, "is_communication", "A collective or point-to-point transfer (ODS class `Dist_CommunicationOp`).", &|op| op.communication);
    flag(out, "is_task", "A task of the dist or plan layer (ODS classes `Dist_TaskOp`, `Plan_TaskOp`).", &|op| op.task);
    flag(out, "is_copy", "A redistribution copy (ODS class `Dist_CopyOp`).", &|op| op.copy);
    flag(out, "is_async", "Returns an `!dist.async_handle` that a `dist.wait` completes.", &|op| op.asynchronous);
    // Sync/async pairs: `x` and `x_start`.
    out.push_str("    /// The `_start` form of a synchronous communication.\n    #[must_use]\n    pub const fn async_form(self) -> Option<Self> {\n        match self {\n");
    for op in &ops {
        let start = format!("{}_start", op.mnemonic);
        if let Some(pair) = ops.iter().find(|o| o.dialect == op.dialect && o.mnemonic == start) {
            let _ = writeln!(out, "            Self::{} => Some(Self::{}),", op.variant, pair.variant);
        }
    }
    out.push_str("            _ => None,\n        }\n    }\n\n");
    out.push_str("    /// The synchronous form of a `_start` op.\n    #[must_use]\n    pub const fn sync_form(self) -> Option<Self> {\n        match self {\n");
    for op in &ops {
        if let Some(base) = op.mnemonic.strip_suffix("_start") {
            if let Some(pair) = ops.iter().find(|o| o.dialect == op.dialect && o.mnemonic == base) {
                let _ = writeln!(out, "            Self::{} => Some(Self::{}),", op.variant, pair.variant);
            }
        }
    }
    out.push_str("            _ => None,\n        }\n    }\n}\n\n");
}

fn value_spec(operand: &Operand) -> String {
    let variadicity = match operand.variadicity {
        "variadic" => "Variadicity::Variadic",
        "optional" => "Variadicity::Optional",
        _ => "Variadicity::Single",
    };
    format!("ValueSpec {{ name: {:?}, variadicity: {variadicity} }}", operand.name)
}

fn kind_expr(kind: &AttrKind) -> String {
    match kind {
        AttrKind::String => "AttrKind::String".into(),
        AttrKind::Integer => "AttrKind::Integer".into(),
        AttrKind::NonNegativeInteger => "AttrKind::NonNegativeInteger".into(),
        AttrKind::PositiveInteger => "AttrKind::PositiveInteger".into(),
        AttrKind::PowerOfTwoInteger => "AttrKind::PowerOfTwoInteger".into(),
        AttrKind::Float => "AttrKind::Float".into(),
        AttrKind::DenseI64Array => "AttrKind::DenseI64Array".into(),
        AttrKind::SymbolRef => "AttrKind::SymbolRef".into(),
        AttrKind::Array => "AttrKind::Array".into(),
        AttrKind::Unit => "AttrKind::Unit".into(),
        AttrKind::IntegerOrSymbolRef => "AttrKind::IntegerOrSymbolRef".into(),
        AttrKind::Enum(e) if e.bits => format!(
            "AttrKind::Enum(&EnumSpec {{ name: {:?}, cases: &[{}], bits: true }})",
            e.name,
            e.cases.iter().map(|(s, v)| format!("({s:?}, {v})")).collect::<Vec<_>>().join(", ")
        ),
        AttrKind::Enum(e) => format!("AttrKind::Enum(&{}_ENUM)", e.name.to_uppercase()),
    }
}

// ---------------------------------------------------------------------------
// Typed builders
// ---------------------------------------------------------------------------

/// The Rust field type of an attribute and the expression turning field
/// `f` into an `Attribute` with builder `b`.
fn attribute_field(kind: &AttrKind) -> (String, String) {
    let conversion = |expr: &str| expr.to_string();
    match kind {
        AttrKind::String => ("&'a str".into(), conversion("a.string(f)")),
        AttrKind::SymbolRef => ("&'a str".into(), conversion("a.symbol(f)")),
        AttrKind::Integer => ("i64".into(), conversion("a.i64(f)")),
        AttrKind::NonNegativeInteger | AttrKind::PositiveInteger | AttrKind::PowerOfTwoInteger => ("u64".into(), conversion("a.count(f)")),
        AttrKind::Float => ("f64".into(), conversion("a.f64(f)")),
        AttrKind::DenseI64Array => ("&'a [i64]".into(), conversion("a.i64_array(f)")),
        AttrKind::Unit => ("bool".into(), conversion("a.unit()")),
        AttrKind::Enum(e) if e.bits => ("i64".into(), conversion("a.enum_case(f)")),
        AttrKind::Enum(e) => (format!("crate::ir::ods::{}", e.name), conversion("a.enum_case(f.value())")),
        AttrKind::Array | AttrKind::IntegerOrSymbolRef => ("::melior::ir::Attribute<'c>".into(), conversion("f")),
    }
}

/// The typed builders of one dialect, included by `src/dialect/<name>/`.
fn emit_builders(dialect: &DialectDef) -> String {
    let mut out =
        format!("// Generated by build.rs from dialects/*.td: the typed builders of the `{}` dialect. Do not edit.\n\n", dialect.name);
    for op in &dialect.ops {
        emit_builder(&mut out, op);
    }
    out
}

fn emit_builder(out: &mut String, op: &OpDef) {
    let name = op.variant.strip_prefix(&camel(&op.dialect)).unwrap_or(&op.variant).to_string();
    let full = format!("{}.{}", op.dialect, op.mnemonic);
    // Required operands and attributes are fields of the builder; optional
    // ones sit in `<Op>Optional`, which defaults to none of them.
    let _ = writeln!(out, "    /// Builds `{full}`: {}", op.summary);
    let _ = writeln!(out, "    #[derive(Clone, Copy)]\n    pub struct {name}<'a, 'c> {{");
    let operand_type = |operand: &Operand| match operand.variadicity {
        "variadic" => "&'a [::melior::ir::Value<'c, 'a>]",
        "optional" => "Option<::melior::ir::Value<'c, 'a>>",
        _ => "::melior::ir::Value<'c, 'a>",
    };
    for operand in op.operands.iter().filter(|o| o.variadicity != "optional") {
        let _ = writeln!(out, "        pub {}: {},", operand.name, operand_type(operand));
    }
    for attr in op.attributes.iter().filter(|a| !a.optional && a.kind != AttrKind::Unit) {
        let (ty, _) = attribute_field(&attr.kind);
        let _ = writeln!(out, "        pub {}: {ty},", attr.name);
    }
    if !op.inferred_results && !op.results.is_empty() {
        out.push_str("        /// Result types, in order (variadic and optional results spread out).\n        pub results: &'a [::melior::ir::Type<'c>],\n");
    }
    let _ = writeln!(out, "        /// The optional operands and attributes.\n        pub optional: {name}Optional<'a, 'c>,\n    }}\n");
    let _ = writeln!(out, "    /// The optional operands and attributes of `{full}`.\n    #[derive(Clone, Copy, Default)]\n    pub struct {name}Optional<'a, 'c> {{");
    for operand in op.operands.iter().filter(|o| o.variadicity == "optional") {
        let _ = writeln!(out, "        pub {}: {},", operand.name, operand_type(operand));
    }
    for attr in op.attributes.iter().filter(|a| a.optional || a.kind == AttrKind::Unit) {
        let (ty, _) = attribute_field(&attr.kind);
        let ty = if attr.kind == AttrKind::Unit { "bool".to_string() } else { format!("Option<{ty}>") };
        let _ = writeln!(out, "        pub {}: {ty},", attr.name);
    }
    out.push_str("        pub _marker: std::marker::PhantomData<(&'a (), &'c ())>,\n    }\n\n");
    let _ = writeln!(out, "    impl<'a, 'c> {name}<'a, 'c> {{");
    let _ = writeln!(out, "        /// The op, not yet inserted anywhere.\n        ///\n        /// # Errors\n        /// When MLIR cannot create it (result types that cannot be inferred).");
    let regions = if op.regions.is_empty() { "" } else { ", regions: Vec<::melior::ir::Region<'c>>" };
    out.push_str("        #[allow(unused_mut, unused_variables)]\n");
    let _ = writeln!(out, "        pub fn build(&self, b: &crate::dialect::builder::Builder<'c>, location: ::melior::ir::Location<'c>{regions}) -> Result<::melior::ir::Operation<'c>, crate::dialect::builder::BuildError> {{");
    let _ =
        writeln!(out, "            let mut operands: Vec<::melior::ir::Value<'c, 'a>> = Vec::with_capacity({});", op.operands.len().max(1));
    if op.operand_segments {
        out.push_str("            let mut segments: Vec<i32> = Vec::new();\n");
    }
    for operand in &op.operands {
        let push = match operand.variadicity {
            "variadic" => format!("operands.extend_from_slice(self.{0}); let n = self.{0}.len();", operand.name),
            "optional" => format!("let n = usize::from(self.optional.{0}.is_some()); operands.extend(self.optional.{0});", operand.name),
            _ => format!("operands.push(self.{0}); let n = 1usize;", operand.name),
        };
        let _ = writeln!(out, "            {{ {push}");
        if op.operand_segments {
            out.push_str("              segments.push(i32::try_from(n).unwrap_or(i32::MAX)); }\n");
        } else {
            out.push_str("              let _ = n; }\n");
        }
    }
    let _ = writeln!(
        out,
        "            let mut attributes: Vec<::mlir_sys::MlirNamedAttribute> = Vec::with_capacity({});",
        op.attributes.len() + usize::from(op.operand_segments)
    );
    // Pushed in the byte order of their names, the order of MLIR's
    // dictionaries: MLIR then only checks the order instead of sorting
    // the attributes of every op built. Their identifiers come in one
    // lookup per op.
    let mut names: Vec<&str> = op.attributes.iter().map(|a| a.name.as_str()).collect();
    if op.operand_segments {
        names.push("operandSegmentSizes");
    }
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let list: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    let _ = writeln!(out, "            static NAMES: [&str; {}] = [{}];", names.len(), list.join(", "));
    out.push_str("            b.with_attributes(&NAMES, |names, a| {\n");
    for (index, name) in names.iter().enumerate() {
        if *name == "operandSegmentSizes" && op.operand_segments {
            let _ = writeln!(out, "            attributes.push(crate::dialect::builder::named(names[{index}], a.i32_array(&segments)));");
            continue;
        }
        let Some(attr) = op.attributes.iter().find(|a| a.name == *name) else { continue };
        let (_, convert) = attribute_field(&attr.kind);
        let push = format!("attributes.push(crate::dialect::builder::named(names[{index}], {convert}));");
        if attr.kind == AttrKind::Unit {
            let _ = writeln!(out, "            if self.optional.{} {{ {push} }}", attr.name);
        } else if attr.optional {
            let _ = writeln!(out, "            if let Some(f) = self.optional.{} {{ {push} }}", attr.name);
        } else {
            let _ = writeln!(out, "            {{ let f = self.{}; {push} }}", attr.name);
        }
    }
    out.push_str("            });\n");
    let regions = if op.regions.is_empty() { "Vec::new()" } else { "regions" };
    // `self.results` is already a slice; the local arrays are borrowed.
    let mut results = "&results";
    if op.inferred_results {
        // `AllTypesMatch<["input", "result"]>`: the data result has the
        // input's type (after the handle of an async form).
        let handle = if op.asynchronous { "b.async_handle(), " } else { "" };
        let _ = writeln!(out, "            let results = [{handle}::melior::ir::ValueLike::r#type(&self.input)];");
    } else if !op.results.is_empty() {
        out.push_str("            let results = self.results;\n");
        results = "results";
    } else {
        out.push_str("            let results: [::melior::ir::Type<'c>; 0] = [];\n");
    }
    let _ = writeln!(out, "            b.create({full:?}, location, &operands, &attributes, {results}, {regions})\n        }}\n    }}\n");
}
