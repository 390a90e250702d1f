//! Reads the dialects' ODS (`dialects/*.td`) with TableGen and emits:
//!
//! - `blueprint.irdl.mlir`: the dialects as IRDL, loaded into every context
//!   (and usable with stock `mlir-opt --irdl-file`);
//! - `ods_tables.rs`: a table of every op's operands, results and attributes
//!   (kinds, optionality, enum cases, numeric confinement, summary), which the
//!   Rust verifiers and `--help` read so the ODS stays the one source of truth.
//!
//! Only the constraint classes Blueprint's ODS uses are understood; anything
//! else is a build error naming the op and the constraint, never a silent
//! `irdl.any`.

use std::{env, fmt::Write as _, fs, path::PathBuf};

use tblgen::{record::Record, TableGenParser};

const DIALECT_FILES: &[&str] = &["ModelOps.td", "DistOps.td", "PlanOps.td"];

fn main() {
    if let Err(message) = run() {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

/// IRDL constraint of one operand or result type.
#[derive(Clone, Debug)]
enum TypeConstraint {
    Any,
    Is(String),
    Base(String),
    AnyOf(Vec<TypeConstraint>),
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
    StringEnum(Vec<String>),
    StringEnumArray(Vec<String>),
    IntegerOrSymbolRef,
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
    dialect: String,
    mnemonic: String,
    summary: String,
    operands: Vec<Operand>,
    results: Vec<Operand>,
    attributes: Vec<Attribute>,
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

fn run() -> Result<(), String> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let prefix = env::var("TABLEGEN_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let include = format!("{prefix}/include");
    let dialects_dir = manifest.join("dialects");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=TABLEGEN_220_PREFIX");

    let mut dialects = Vec::new();
    for file in DIALECT_FILES {
        let path = dialects_dir.join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        dialects.push(read_dialect(&path, &dialects_dir, &include)?);
    }
    println!(
        "cargo:rerun-if-changed={}",
        dialects_dir.join("BlueprintBase.td").display()
    );

    fs::write(out_dir.join("blueprint.irdl.mlir"), emit_irdl(&dialects))
        .map_err(|e| format!("writing IRDL: {e}"))?;
    fs::write(out_dir.join("ods_tables.rs"), emit_tables(&dialects))
        .map_err(|e| format!("writing ODS tables: {e}"))?;
    Ok(())
}

fn read_dialect(
    path: &std::path::Path,
    dialects_dir: &std::path::Path,
    include: &str,
) -> Result<DialectDef, String> {
    let keeper = TableGenParser::new()
        .add_source_file(&path.to_string_lossy())
        .add_include_directory(include)
        .add_include_directory(&dialects_dir.to_string_lossy())
        .parse()
        .map_err(|e| format!("{}: TableGen parse failed: {e}", path.display()))?;
    let file_name = path.file_name().unwrap_or_default().to_string_lossy().to_string();

    // The dialect defined in this file is the one whose ops it defines; the
    // op records of included files are not re-emitted.
    let mut dialect: Option<DialectDef> = None;
    for def in keeper.all_derived_definitions("Dialect") {
        let name = def.str_value("name").map_err(|e| e.to_string())?.to_string();
        let expected = file_name.trim_end_matches("Ops.td").to_lowercase();
        if name == expected {
            dialect = Some(DialectDef {
                name,
                summary: def.str_value("summary").unwrap_or("").to_string(),
                types: Vec::new(),
                ops: Vec::new(),
            });
        }
    }
    let mut dialect = dialect.ok_or_else(|| format!("{file_name}: no dialect named after the file"))?;

    for def in keeper.all_derived_definitions("TypeDef") {
        let info = typedef_info(def)?;
        if info.dialect == dialect.name {
            dialect.types.push(info);
        }
    }
    for def in keeper.all_derived_definitions("Op") {
        let op_dialect = def
            .def_value("opDialect")
            .and_then(|d| d.str_value("name").map(str::to_string))
            .map_err(|e| e.to_string())?;
        if op_dialect != dialect.name {
            continue;
        }
        dialect.ops.push(read_op(def, &op_dialect)?);
    }
    dialect.ops.sort_by(|a, b| a.mnemonic.cmp(&b.mnemonic));
    dialect.types.sort_by(|a, b| a.mnemonic.cmp(&b.mnemonic));
    Ok(dialect)
}

fn typedef_info(def: Record) -> Result<TypeDefInfo, String> {
    let dialect = def
        .def_value("dialect")
        .and_then(|d| d.str_value("name").map(str::to_string))
        .map_err(|e| e.to_string())?;
    let mnemonic = def.str_value("mnemonic").map_err(|e| e.to_string())?.to_string();
    Ok(TypeDefInfo { dialect, mnemonic })
}

fn read_op(def: Record, dialect: &str) -> Result<OpDef, String> {
    let mnemonic = def.str_value("opName").map_err(|e| e.to_string())?.to_string();
    let op_name = format!("{dialect}.{mnemonic}");
    let summary = def.str_value("summary").unwrap_or("").trim().to_string();
    let mut operands = Vec::new();
    let mut attributes = Vec::new();
    let arguments = def.dag_value("arguments").map_err(|e| e.to_string())?;
    for (name, init) in arguments.args() {
        let name = name.ok_or_else(|| format!("{op_name}: unnamed argument"))?.to_string();
        let record: Record = init
            .try_into()
            .map_err(|e| format!("{op_name}: argument {name} is not a def: {e:?}"))?;
        if record.subclass_of("Attr") {
            attributes.push(read_attribute(record, &name, &op_name)?);
        } else {
            operands.push(read_value(record, &name, &op_name)?);
        }
    }
    let mut results = Vec::new();
    for (name, init) in def.dag_value("results").map_err(|e| e.to_string())?.args() {
        let name = name.ok_or_else(|| format!("{op_name}: unnamed result"))?.to_string();
        let record: Record = init
            .try_into()
            .map_err(|e| format!("{op_name}: result {name} is not a def: {e:?}"))?;
        results.push(read_value(record, &name, &op_name)?);
    }
    Ok(OpDef {
        dialect: dialect.to_string(),
        mnemonic,
        summary,
        operands,
        results,
        attributes,
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
    Ok(Operand {
        name: name.to_string(),
        variadicity,
        constraint: type_constraint(base, name, op)?,
    })
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
    let (optional, base) = if record.subclass_of("OptionalAttr") {
        (true, record.def_value("baseAttr").map_err(|e| e.to_string())?)
    } else {
        (false, record)
    };
    Ok(Attribute {
        name: name.to_string(),
        optional,
        kind: attr_kind(base, name, op)?,
    })
}

fn attr_kind(record: Record, name: &str, op: &str) -> Result<AttrKind, String> {
    if record.has_field("enumCases") {
        let cases = record
            .list_of_strings_value("enumCases")
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(str::to_string)
            .collect();
        return Ok(if record.subclass_of("TypedArrayAttrBase") {
            AttrKind::StringEnumArray(cases)
        } else {
            AttrKind::StringEnum(cases)
        });
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
            AttrKind::Integer
            | AttrKind::NonNegativeInteger
            | AttrKind::PositiveInteger
            | AttrKind::PowerOfTwoInteger => self.value(base("integer")),
            AttrKind::Float => self.value(base("float")),
            AttrKind::DenseI64Array => self.value(base("dense_array")),
            AttrKind::SymbolRef => self.value(base("symbol_ref")),
            AttrKind::Array | AttrKind::StringEnumArray(_) => self.value(base("array")),
            AttrKind::Unit => self.value(base("unit")),
            AttrKind::StringEnum(cases) => {
                let names: Vec<String> =
                    cases.iter().map(|c| self.value(format!("irdl.is {c:?}"))).collect();
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
         // Load with `mlir-opt --irdl-file=<this file>`.\n",
    );
    for dialect in dialects {
        let _ = writeln!(out, "irdl.dialect @{} {{", dialect.name);
        for ty in &dialect.types {
            let _ = writeln!(out, "  irdl.type @{}", ty.mnemonic);
        }
        for op in &dialect.ops {
            let mut b = IrdlBuilder { text: String::new(), next: 0 };
            let operands: Vec<String> = op
                .operands
                .iter()
                .map(|o| format!("{}: {}{}", o.name, variadic_prefix(o), b.type_constraint(&o.constraint)))
                .collect();
            let results: Vec<String> = op
                .results
                .iter()
                .map(|o| format!("{}: {}{}", o.name, variadic_prefix(o), b.type_constraint(&o.constraint)))
                .collect();
            // IRDL has no optional attributes: optional ones are checked in Rust.
            let attributes: Vec<String> = op
                .attributes
                .iter()
                .filter(|a| !a.optional)
                .map(|a| format!("\"{}\" = {}", a.name, b.attr_constraint(&a.kind)))
                .collect();
            let _ = writeln!(out, "  irdl.operation @{} {{", op.mnemonic);
            out.push_str(&b.text);
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

fn emit_tables(dialects: &[DialectDef]) -> String {
    let mut out = String::from("// Generated by build.rs from dialects/*.td. Do not edit.\n\n");
    out.push_str("pub static DIALECTS: &[DialectSpec] = &[\n");
    for dialect in dialects {
        let _ = writeln!(
            out,
            "    DialectSpec {{ name: {:?}, summary: {:?}, ops: &[",
            dialect.name, dialect.summary
        );
        for op in &dialect.ops {
            let _ = writeln!(
                out,
                "        OpSpec {{ name: \"{}.{}\", summary: {:?}, operands: &[{}], results: &[{}], attributes: &[",
                op.dialect,
                op.mnemonic,
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
        AttrKind::StringEnum(cases) => format!("AttrKind::StringEnum(&{cases:?})"),
        AttrKind::StringEnumArray(cases) => format!("AttrKind::StringEnumArray(&{cases:?})"),
    }
}
