//! `#[derive(Equivalence)]`: the MPI datatype of a Rust struct, re-exported as
//! `oxmpi::Equivalence`.
//!
//! The derive implements `oxmpi::datatype::Datatyped` for structs with named or tuple
//! fields: the datatype is a struct type listing each field at its offset (`offset_of!`),
//! resized to `size_of::<Self>()`, so arrays of the struct step by its Rust size and padding
//! is never read or sent. Field types must themselves be `Datatyped`: numbers, `bool`, every
//! `oxmpi::Equivalence` type, other derived structs, and arrays of any of these (written as
//! `[T; N]`, they become contiguous types).
//!
//! ```
//! use oxmpi::datatype::Datatyped;
//!
//! #[derive(oxmpi::Equivalence)]
//! struct Particle {
//!     id: u8,          // 7 bytes of padding follow
//!     pos: [f64; 3],
//! }
//! let t = Particle::datatype();
//! assert_eq!((t.size(), t.extent()), (25, 32));
//! ```
//!
//! Enums, unions, and fields that are references or pointers have no MPI datatype:
//! ```compile_fail
//! #[derive(oxmpi::Equivalence)]
//! enum Shape { Circle, Square } // error: #[derive(Equivalence)] supports structs only
//! ```
//! ```compile_fail
//! #[derive(oxmpi::Equivalence)]
//! struct Borrowed<'a> { x: &'a f64 } // error: a reference has no MPI datatype
//! ```

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_macro_input, parse_quote, Data, DeriveInput, Error, Fields, Index, Type};

/// Derives `oxmpi::datatype::Datatyped` for a struct (see the crate documentation).
#[proc_macro_derive(Equivalence)]
pub fn derive_equivalence(input: TokenStream) -> TokenStream {
    let ast = parse_macro_input!(input as DeriveInput);
    match expand(ast) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The datatype expression of a field type.
fn datatype_of(ty: &Type) -> Result<Tokens, Error> {
    match ty {
        Type::Array(a) => {
            let inner = datatype_of(&a.elem)?;
            let len = &a.len;
            Ok(quote_spanned! {ty.span()=>
                {
                    const LEN: usize = #len;
                    ::oxmpi::datatype::Type::contiguous(LEN as i64, &#inner)
                        .unwrap_or_else(|e| ::core::unreachable!("array of {} elements: {}", LEN, e))
                }
            })
        }
        Type::Reference(_) | Type::Ptr(_) => Err(Error::new(
            ty.span(),
            "#[derive(Equivalence)]: a reference or pointer has no MPI datatype (its value is an \
             address in this process); send the data it points to instead",
        )),
        Type::Group(g) => datatype_of(&g.elem),
        Type::Paren(p) => datatype_of(&p.elem),
        Type::Tuple(t) if !t.elems.is_empty() => Err(Error::new(
            ty.span(),
            "#[derive(Equivalence)]: tuple fields are not supported; use a struct or an array",
        )),
        _ => Ok(quote_spanned! {ty.span()=> <#ty as ::oxmpi::datatype::Datatyped>::datatype() }),
    }
}

/// The innermost element type of (nested) arrays.
fn element(ty: &Type) -> &Type {
    match ty {
        Type::Array(a) => element(&a.elem),
        Type::Group(g) => element(&g.elem),
        Type::Paren(p) => element(&p.elem),
        t => t,
    }
}

fn expand(mut ast: DeriveInput) -> Result<Tokens, Error> {
    let fields =
        match &ast.data {
            Data::Struct(s) => s.fields.clone(),
            Data::Enum(e) => return Err(Error::new(
                e.enum_token.span(),
                "#[derive(Equivalence)] supports structs only: not every bit pattern of an enum \
                 is a value, so it cannot be received as bytes",
            )),
            Data::Union(u) => {
                return Err(Error::new(
                    u.union_token.span(),
                    "#[derive(Equivalence)] supports structs only: a union has no one datatype",
                ))
            }
        };
    let members: Vec<(Tokens, Type)> = match &fields {
        Fields::Named(n) => n
            .named
            .iter()
            .map(|f| {
                let id = f.ident.clone();
                (quote!(#id), f.ty.clone())
            })
            .collect(),
        Fields::Unnamed(u) => u
            .unnamed
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let idx = Index::from(i);
                (quote!(#idx), f.ty.clone())
            })
            .collect(),
        Fields::Unit => vec![],
    };
    let mut types = Vec::new();
    for (_, ty) in &members {
        types.push(datatype_of(ty)?);
    }
    // Generic structs: every field's element type must have a datatype.
    {
        let wc = ast.generics.make_where_clause();
        for (_, ty) in &members {
            let el = element(ty);
            wc.predicates
                .push(parse_quote!(#el: ::oxmpi::datatype::Datatyped));
        }
    }
    let name = &ast.ident;
    let (impl_g, ty_g, where_c) = ast.generics.split_for_impl();
    let n = members.len();
    let offsets = members
        .iter()
        .map(|(m, _)| quote!(::core::mem::offset_of!(Self, #m) as i64));
    Ok(quote! {
        // SAFETY: the datatype lists each field once, at its offset inside `Self`, with the
        // field type's own datatype (which covers only initialized bytes of that field), and
        // has the extent of `Self`: it never reaches padding or outside the value.
        unsafe impl #impl_g ::oxmpi::datatype::Datatyped for #name #ty_g #where_c {
            fn datatype() -> ::oxmpi::datatype::Type {
                let blocklens = [1i64; #n];
                let displs: [i64; #n] = [#(#offsets),*];
                let types: [::oxmpi::datatype::Type; #n] = [#(#types),*];
                let t = ::oxmpi::datatype::Type::structure(&blocklens, &displs, &types)
                    .unwrap_or_else(|e| ::core::unreachable!("fields of {}: {}", ::core::stringify!(#name), e));
                ::oxmpi::datatype::Type::resized(&t, 0, ::core::mem::size_of::<Self>() as i64)
                    .unwrap_or_else(|e| ::core::unreachable!("size of {}: {}", ::core::stringify!(#name), e))
            }
        }
    })
}
