//! The types a wire layout is written in: structs of fields of wire types.

/// The layout of one struct: its fields in wire order (tagged fields are listed with their tag).
pub(super) struct Shape {
    /// Struct name, for error messages.
    pub name: &'static str,
    /// Fields in declaration (= wire) order.
    pub fields: &'static [Field],
}

/// One field of a [`Shape`].
pub(super) struct Field {
    /// Field name, for error messages.
    pub name: &'static str,
    /// First version with this field.
    pub min: i16,
    /// Last version with this field.
    pub max: i16,
    /// `Some(tag)` for a tagged field (flexible versions only).
    pub tag: Option<u32>,
    /// Wire type.
    pub ty: Ty,
}

/// Wire types, in their classic or compact (flexible) form.
pub(super) enum Ty {
    I8,
    I16,
    I32,
    I64,
    #[allow(dead_code)]
    F64,
    Bool,
    Uuid,
    /// A (nullable) string.
    Str,
    /// (Nullable) bytes, including record sets.
    Bytes,
    /// An array of a primitive type.
    PrimArray(&'static Ty),
    /// An array of structs.
    Array(&'static Shape),
    /// A nested struct (only as a tagged field in our messages).
    Struct(&'static Shape),
    /// A nullable nested struct: an i8 marker (1 present, anything else null), then the struct.
    OptionStruct(&'static Shape),
}
