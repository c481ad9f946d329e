//! Datatypes as ids (`MPI_Datatype`) for the C layer: the predefined ones at their MPI-5.0
//! ABI values, derived ones from every constructor, commit, free, dup, envelope and
//! contents, names, sizes and extents, element counts, pack/unpack, match_size and the f90
//! types (which, like predefined types, keep one id for good).
//!
//! A handle refers to an immutable [`Type`], shared (`Arc`): an operation in flight holds
//! its own clone from [`type_get`]/[`type_committed`], so [`type_free`] only drops the
//! handle's reference and the type lives until the operation completes.
//!
//! Datatype calls need no initialized MPI (they touch no engine), a leniency the standard
//! allows. Errors: an id that is null, freed or never issued is [`ErrorClass::Type`], and so is
//! an uncommitted type where communication or packing needs a committed one.
//!
//! Attributes (`MPI_Type_create_keyval`, `MPI_Type_set_attr`…) live in the same store as
//! communicators' (`handle::attr`): copy callbacks run on `type_dup`, delete callbacks on
//! replace, delete and `type_free`, never under a lock.
//!
//! The large-count constructors (`MPI_Type_vector_c`…) are the same calls followed by
//! [`Type::with_large_counts`] before [`type_from`]; the wrappers here are the `int` forms.
//!
//! # Standard sections
//! MPI-5.0 §5.1 (derived datatypes), §5.1.13 (decoding), §5.2 (pack), §21.5 (ABI handles).

use std::sync::{Arc, Mutex, OnceLock};

use super::attr::{next_key_id, Attrs, CopyHook, DeleteHook, KeyDef, Value};
use super::comm::KeyvalHandle;
use super::table::Table;
use crate::datatype::build::{Distribution, Order, Type};
use crate::datatype::envelope::{self, Contents, Envelope, TypeClass};
use crate::datatype::pack;
use crate::datatype::predefined::{Predefined, ALL};
use crate::error::{Error, ErrorClass, Result};

/// A datatype id (`MPI_Datatype`). `Copy`; derived types are valid until [`type_free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct TypeHandle(u32);

impl TypeHandle {
    /// `MPI_DATATYPE_NULL` (ABI value).
    pub const NULL: TypeHandle = TypeHandle(Predefined::NULL_HANDLE as u32);

    /// The fixed id of predefined type `p` (its ABI value).
    pub const fn of(p: Predefined) -> TypeHandle {
        TypeHandle(p.handle() as u32)
    }

    /// The id as an integer (`MPI_Type_toint`).
    pub fn to_int(self) -> i32 {
        self.0 as i32
    }

    /// The id with integer value `i` (`MPI_Type_fromint`).
    pub fn from_int(i: i32) -> TypeHandle {
        TypeHandle(i as u32)
    }
}

#[derive(Default)]
struct State {
    committed: bool,
    name: Option<String>,
}

#[derive(Clone)]
struct Entry {
    ty: Type,
    state: Arc<Mutex<State>>,
    attrs: Arc<Attrs>,
}

impl Entry {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

static TYPES: Table<Entry> = Table::new();

/// Predefined types (built once), their names (which `type_set_name` may change), and the
/// f90 types, which are permanent like them.
struct Fixed {
    types: Vec<Type>,
    /// Per type of `types`, what [`plain`] answers.
    plain: Vec<Option<Plain>>,
    names: Mutex<Vec<Option<String>>>,
    attrs: Vec<Arc<Attrs>>,
    f90: Mutex<Vec<(Type, TypeHandle)>>,
}

fn fixed() -> &'static Fixed {
    static F: OnceLock<Fixed> = OnceLock::new();
    F.get_or_init(|| {
        let types: Vec<Type> = ALL
            .iter()
            .map(|i| {
                Type::predefined(
                    Predefined::from_handle(i.handle as u32).unwrap_or(Predefined::BYTE),
                )
            })
            .collect();
        let plain = types
            .iter()
            .map(|t| {
                (t.is_contiguous() && t.lb() == 0).then(|| Plain {
                    size: t.size(),
                    base: t.base(),
                })
            })
            .collect();
        Fixed {
            types,
            plain,
            names: Mutex::new(vec![None; ALL.len()]),
            attrs: ALL.iter().map(|_| Arc::default()).collect(),
            f90: Mutex::new(Vec::new()),
        }
    })
}

/// A predefined type whose data are the `size` bytes at a buffer's address (no gap, lower
/// bound 0), and the one predefined type it is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Plain {
    /// Bytes of one element.
    pub(crate) size: u64,
    /// What [`Type::base`] says of it.
    pub(crate) base: Option<Predefined>,
}

/// `h` as a [`Plain`] type, if it is one: the short path of the one-sided calls, which then
/// need no [`Type`] (two indexed loads where the type's layout took several dependent ones).
#[inline(always)]
pub(crate) fn plain(h: TypeHandle) -> Option<Plain> {
    fixed().plain[predefined_index(h)?]
}

/// `h`'s position in [`ALL`] if it is a predefined type (one indexed load: a binary search
/// here was a quarter of a C `MPI_Get`'s time).
#[inline]
fn predefined_index(h: TypeHandle) -> Option<usize> {
    Predefined::from_handle(h.0).map(Predefined::position)
}

fn bad(call: &str, h: TypeHandle) -> Error {
    Error::new(
        ErrorClass::Type,
        format!(
            "{call}: {:#x} is not a live datatype (null, freed, or never created)",
            h.0
        ),
    )
}

fn entry(call: &str, h: TypeHandle) -> Result<Entry> {
    if let Some(i) = predefined_index(h) {
        return Ok(Entry {
            ty: fixed().types[i].clone(),
            state: Arc::new(Mutex::new(State {
                committed: true,
                name: None,
            })),
            attrs: fixed().attrs[i].clone(),
        });
    }
    TYPES.get(h.0).ok_or_else(|| bad(call, h))
}

/// The type behind `h` (committed or not), for an operation to hold while it runs.
pub fn type_get(h: TypeHandle) -> Result<Type> {
    if let Some(i) = predefined_index(h) {
        return Ok(fixed().types[i].clone());
    }
    Ok(entry("type_get", h)?.ty)
}

/// The committed type behind `h`, for communication and packing ([`ErrorClass::Type`] if it
/// is not committed).
pub fn type_committed(call: &str, h: TypeHandle) -> Result<Type> {
    // Predefined types (the common case) cost a lookup and a reference count, no allocation.
    if let Some(i) = predefined_index(h) {
        return Ok(fixed().types[i].clone());
    }
    let e = entry(call, h)?;
    if !e.state().committed {
        return Err(Error::new(
            ErrorClass::Type,
            format!("{call}: datatype {:#x} is not committed", h.0),
        ));
    }
    Ok(e.ty)
}

/// [`type_committed`], lending a predefined type instead of counting a reference to it (two
/// locked instructions per use, on every one-sided call of the C ABI).
#[inline]
pub(crate) fn type_committed_lent(
    call: &str,
    h: TypeHandle,
) -> Result<std::borrow::Cow<'static, Type>> {
    match predefined_index(h) {
        Some(i) => Ok(std::borrow::Cow::Borrowed(&fixed().types[i])),
        None => type_committed(call, h).map(std::borrow::Cow::Owned),
    }
}

/// A new id for a type built with the [`Type`] constructors (not committed).
pub fn type_from(ty: Type) -> Result<TypeHandle> {
    if let Some(p) = ty.as_predefined() {
        return Ok(TypeHandle::of(p));
    }
    if let Some((_, h)) = fixed()
        .f90
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(t, _)| *t == ty)
    {
        return Ok(*h);
    }
    insert(Entry {
        ty,
        state: Arc::default(),
        attrs: Arc::default(),
    })
}

fn insert(e: Entry) -> Result<TypeHandle> {
    TYPES
        .insert(e)
        .map(TypeHandle)
        .ok_or_else(|| Error::new(ErrorClass::NoMem, "too many datatypes are live"))
}

fn old(call: &str, h: TypeHandle) -> Result<Type> {
    Ok(entry(call, h)?.ty)
}

fn i64s(v: &[i32]) -> Vec<i64> {
    v.iter().map(|&x| x as i64).collect()
}

/// `MPI_Type_contiguous`.
pub fn type_contiguous(count: i32, oldtype: TypeHandle) -> Result<TypeHandle> {
    type_from(Type::contiguous(
        count as i64,
        &old("type_contiguous", oldtype)?,
    )?)
}

/// `MPI_Type_vector`.
pub fn type_vector(
    count: i32,
    blocklen: i32,
    stride: i32,
    oldtype: TypeHandle,
) -> Result<TypeHandle> {
    type_from(Type::vector(
        count as i64,
        blocklen as i64,
        stride as i64,
        &old("type_vector", oldtype)?,
    )?)
}

/// `MPI_Type_create_hvector` (`stride` in bytes).
pub fn type_create_hvector(
    count: i32,
    blocklen: i32,
    stride: i64,
    oldtype: TypeHandle,
) -> Result<TypeHandle> {
    type_from(Type::hvector(
        count as i64,
        blocklen as i64,
        stride,
        &old("type_create_hvector", oldtype)?,
    )?)
}

/// `MPI_Type_indexed`.
pub fn type_indexed(blocklens: &[i32], displs: &[i32], oldtype: TypeHandle) -> Result<TypeHandle> {
    type_from(Type::indexed(
        &i64s(blocklens),
        &i64s(displs),
        &old("type_indexed", oldtype)?,
    )?)
}

/// `MPI_Type_create_hindexed` (displacements in bytes).
pub fn type_create_hindexed(
    blocklens: &[i32],
    displs: &[i64],
    oldtype: TypeHandle,
) -> Result<TypeHandle> {
    type_from(Type::hindexed(
        &i64s(blocklens),
        displs,
        &old("type_create_hindexed", oldtype)?,
    )?)
}

/// `MPI_Type_create_indexed_block`.
pub fn type_create_indexed_block(
    blocklen: i32,
    displs: &[i32],
    oldtype: TypeHandle,
) -> Result<TypeHandle> {
    let o = old("type_create_indexed_block", oldtype)?;
    type_from(Type::indexed_block(blocklen as i64, &i64s(displs), &o)?)
}

/// `MPI_Type_create_hindexed_block` (displacements in bytes).
pub fn type_create_hindexed_block(
    blocklen: i32,
    displs: &[i64],
    oldtype: TypeHandle,
) -> Result<TypeHandle> {
    type_from(Type::hindexed_block(
        blocklen as i64,
        displs,
        &old("type_create_hindexed_block", oldtype)?,
    )?)
}

/// `MPI_Type_create_struct`.
pub fn type_create_struct(
    blocklens: &[i32],
    displs: &[i64],
    types: &[TypeHandle],
) -> Result<TypeHandle> {
    let ts = types
        .iter()
        .map(|&t| old("type_create_struct", t))
        .collect::<Result<Vec<_>>>()?;
    type_from(Type::structure(&i64s(blocklens), displs, &ts)?)
}

/// `MPI_Type_create_subarray`.
pub fn type_create_subarray(
    sizes: &[i32],
    subsizes: &[i32],
    starts: &[i32],
    order: Order,
    oldtype: TypeHandle,
) -> Result<TypeHandle> {
    let o = old("type_create_subarray", oldtype)?;
    type_from(Type::subarray(
        &i64s(sizes),
        &i64s(subsizes),
        &i64s(starts),
        order,
        &o,
    )?)
}

/// `MPI_Type_create_darray`.
#[allow(clippy::too_many_arguments)]
pub fn type_create_darray(
    size: i32,
    rank: i32,
    gsizes: &[i32],
    distribs: &[Distribution],
    psizes: &[i32],
    order: Order,
    oldtype: TypeHandle,
) -> Result<TypeHandle> {
    let o = old("type_create_darray", oldtype)?;
    type_from(Type::darray(
        size,
        rank,
        &i64s(gsizes),
        distribs,
        psizes,
        order,
        &o,
    )?)
}

/// `MPI_Type_create_resized`.
pub fn type_create_resized(oldtype: TypeHandle, lb: i64, extent: i64) -> Result<TypeHandle> {
    type_from(Type::resized(
        &old("type_create_resized", oldtype)?,
        lb,
        extent,
    )?)
}

/// `MPI_Type_dup`: a new id with the same type map and committed state; attributes go
/// through their copy callbacks (if one fails, so does the dup, leaving nothing behind).
pub fn type_dup(h: TypeHandle) -> Result<TypeHandle> {
    let e = entry("type_dup", h)?;
    let committed = e.state().committed;
    let attrs = e.attrs.copy_for_dup(h.0)?;
    insert(Entry {
        ty: Type::dup(&e.ty),
        state: Arc::new(Mutex::new(State {
            committed,
            name: None,
        })),
        attrs: Arc::new(attrs),
    })
}

/// `MPI_Type_commit`. The type was compiled when built, so this only allows it in
/// communication; committing twice, or a predefined type, is fine.
pub fn type_commit(h: TypeHandle) -> Result<()> {
    entry("type_commit", h)?.state().committed = true;
    Ok(())
}

/// `MPI_Type_free`: drops the id and sets `*h` to [`TypeHandle::NULL`]; operations in flight
/// keep the type. Predefined and f90 types cannot be freed ([`ErrorClass::Type`]).
pub fn type_free(h: &mut TypeHandle) -> Result<()> {
    if predefined_index(*h).is_some() || is_f90(*h) {
        return Err(Error::new(
            ErrorClass::Type,
            format!("type_free: {:#x} is a predefined datatype", h.0),
        ));
    }
    let e = TYPES.remove(h.0).ok_or_else(|| bad("type_free", *h))?;
    let id = h.0;
    *h = TypeHandle::NULL;
    // Every attribute is deleted; the first failing delete callback's error is returned.
    e.attrs.clear(id)
}

fn is_f90(h: TypeHandle) -> bool {
    fixed()
        .f90
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|(_, x)| *x == h)
}

/// `MPI_Type_size_x`.
pub fn type_size(h: TypeHandle) -> Result<i64> {
    Ok(entry("type_size", h)?.ty.size() as i64)
}

/// `MPI_Type_get_extent_x`: `(lb, extent)`.
pub fn type_get_extent(h: TypeHandle) -> Result<(i64, i64)> {
    let t = entry("type_get_extent", h)?.ty;
    Ok((t.lb(), t.extent()))
}

/// `MPI_Type_get_true_extent_x`: `(true_lb, true_extent)`.
pub fn type_get_true_extent(h: TypeHandle) -> Result<(i64, i64)> {
    Ok(entry("type_get_true_extent", h)?.ty.true_extent())
}

/// `MPI_Get_elements_x` for `bytes` received bytes: `None` is `MPI_UNDEFINED`.
pub fn get_elements(bytes: u64, h: TypeHandle) -> Result<Option<u64>> {
    Ok(entry("get_elements", h)?.ty.elements_in(bytes))
}

/// `MPI_Get_count` for `bytes` received bytes: `None` is `MPI_UNDEFINED`.
pub fn get_count(bytes: u64, h: TypeHandle) -> Result<Option<u64>> {
    Ok(entry("get_count", h)?.ty.count_in(bytes))
}

/// `MPI_Type_get_envelope`.
pub fn type_get_envelope(h: TypeHandle) -> Result<Envelope> {
    Ok(entry("type_get_envelope", h)?.ty.envelope())
}

/// `MPI_Type_get_contents`: the arrays, with an id for each old type (new ids for derived
/// ones, which the caller frees; predefined ones at their fixed ids).
pub fn type_get_contents(h: TypeHandle) -> Result<(Contents, Vec<TypeHandle>)> {
    let c = entry("type_get_contents", h)?.ty.contents()?;
    let ids = c
        .datatypes
        .iter()
        .map(|t| type_from(t.clone()))
        .collect::<Result<Vec<_>>>()?;
    Ok((c, ids))
}

/// `MPI_Type_set_name`.
pub fn type_set_name(h: TypeHandle, name: &str) -> Result<()> {
    if let Some(i) = predefined_index(h) {
        fixed().names.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(name.to_string());
        return Ok(());
    }
    entry("type_set_name", h)?.state().name = Some(name.to_string());
    Ok(())
}

/// `MPI_Type_get_name`: the name set, the MPI name of a predefined type (`"MPI_INT"`), or
/// the empty string.
pub fn type_get_name(h: TypeHandle) -> Result<String> {
    if let Some(i) = predefined_index(h) {
        let set = fixed().names.lock().unwrap_or_else(|p| p.into_inner())[i].clone();
        return Ok(set.unwrap_or_else(|| ALL[i].name.to_string()));
    }
    Ok(entry("type_get_name", h)?
        .state()
        .name
        .clone()
        .unwrap_or_default())
}

/// `MPI_Type_match_size`.
pub fn type_match_size(class: TypeClass, size: usize) -> Result<TypeHandle> {
    Ok(TypeHandle::of(envelope::match_size(class, size)?))
}

fn f90(t: Type) -> Result<TypeHandle> {
    let mut v = fixed().f90.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, h)) = v.iter().find(|(x, _)| *x == t) {
        return Ok(*h);
    }
    // f90 types live for the whole run: their table slot is never freed.
    let h = insert(Entry {
        ty: t.clone(),
        state: Arc::new(Mutex::new(State {
            committed: true,
            name: None,
        })),
        attrs: Arc::default(),
    })?;
    v.push((t, h));
    Ok(h)
}

/// `MPI_Type_create_f90_real` (the same id for the same arguments).
pub fn type_create_f90_real(p: i32, r: i32) -> Result<TypeHandle> {
    f90(envelope::create_f90_real(p, r)?)
}

/// `MPI_Type_create_f90_complex`.
pub fn type_create_f90_complex(p: i32, r: i32) -> Result<TypeHandle> {
    f90(envelope::create_f90_complex(p, r)?)
}

/// `MPI_Type_create_f90_integer`.
pub fn type_create_f90_integer(r: i32) -> Result<TypeHandle> {
    f90(envelope::create_f90_integer(r)?)
}

/// A copy callback (`MPI_Type_copy_attr_function`): given the type being duplicated, the
/// keyval, its extra state and the value; returns the value for the duplicate, `None` to
/// copy nothing, or an error that fails the duplication.
pub type TypeCopyFn =
    Arc<dyn Fn(TypeHandle, KeyvalHandle, usize, usize) -> Result<Option<usize>> + Send + Sync>;

/// A delete callback (`MPI_Type_delete_attr_function`): given the type, the keyval, its
/// extra state and the value leaving the type.
pub type TypeDeleteFn =
    Arc<dyn Fn(TypeHandle, KeyvalHandle, usize, usize) -> Result<()> + Send + Sync>;

/// What `type_dup` does with a keyval's values.
#[derive(Clone)]
pub enum TypeCopyPolicy {
    /// Never copied (`MPI_TYPE_NULL_COPY_FN`).
    Null,
    /// Copied as they are (`MPI_TYPE_DUP_FN`).
    Dup,
    /// The callback decides per value.
    Call(TypeCopyFn),
}

/// Datatype keyvals, by number (a namespace of their own, as in MPI).
static KEYVALS: Mutex<Vec<(u32, Arc<KeyDef>)>> = Mutex::new(Vec::new());

fn keyvals() -> std::sync::MutexGuard<'static, Vec<(u32, Arc<KeyDef>)>> {
    KEYVALS.lock().unwrap_or_else(|p| p.into_inner())
}

fn word(v: &Value) -> usize {
    v.downcast_ref::<usize>().copied().unwrap_or(0)
}

/// `MPI_Type_create_keyval`: values are pointer-sized (`void *` in C); `extra_state` is
/// passed to both callbacks.
pub fn type_create_keyval(
    copy: TypeCopyPolicy,
    delete: Option<TypeDeleteFn>,
    extra_state: usize,
) -> Result<KeyvalHandle> {
    let id = next_key_id();
    let k = KeyvalHandle::from_int(id as i32);
    let copy: Option<CopyHook> = match copy {
        TypeCopyPolicy::Null => None,
        TypeCopyPolicy::Dup => Some(Box::new(|_, v: &Value| Ok(Some(v.clone())))),
        TypeCopyPolicy::Call(f) => Some(Box::new(move |t: u32, v: &Value| {
            Ok(f(TypeHandle(t), k, extra_state, word(v))?.map(|x| Arc::new(x) as Value))
        })),
    };
    let delete: Option<DeleteHook> = delete.map(|f| -> DeleteHook {
        Box::new(move |t: u32, v: &Value| f(TypeHandle(t), k, extra_state, word(v)))
    });
    keyvals().push((
        id,
        Arc::new(KeyDef {
            id,
            copy,
            delete,
            predefined: false,
        }),
    ));
    Ok(k)
}

fn keydef(call: &str, k: KeyvalHandle) -> Result<Arc<KeyDef>> {
    keyvals()
        .iter()
        .find(|(id, _)| *id as i32 == k.to_int())
        .map(|(_, d)| d.clone())
        .ok_or_else(|| {
            Error::new(
                ErrorClass::Keyval,
                format!(
                    "{call}: keyval {} is not a live datatype keyval",
                    k.to_int()
                ),
            )
        })
}

/// `MPI_Type_free_keyval`: sets `*k` to [`KeyvalHandle::INVALID`]; attributes already set
/// with it keep working until deleted.
pub fn type_free_keyval(k: &mut KeyvalHandle) -> Result<()> {
    keydef("type_free_keyval", *k)?;
    keyvals().retain(|(id, _)| *id as i32 != k.to_int());
    *k = KeyvalHandle::INVALID;
    Ok(())
}

/// `MPI_Type_set_attr`; a value it replaces goes through the delete callback first.
pub fn type_set_attr(h: TypeHandle, k: KeyvalHandle, value: usize) -> Result<()> {
    let e = entry("type_set_attr", h)?;
    e.attrs
        .set(h.0, &keydef("type_set_attr", k)?, Arc::new(value))
}

/// `MPI_Type_get_attr`: the value, if set.
pub fn type_get_attr(h: TypeHandle, k: KeyvalHandle) -> Result<Option<usize>> {
    let e = entry("type_get_attr", h)?;
    Ok(e.attrs
        .get(keydef("type_get_attr", k)?.id)
        .as_ref()
        .map(word))
}

/// `MPI_Type_delete_attr`, running the delete callback (if it fails, the attribute stays).
pub fn type_delete_attr(h: TypeHandle, k: KeyvalHandle) -> Result<()> {
    let e = entry("type_delete_attr", h)?;
    e.attrs
        .delete(h.0, &*keydef("type_delete_attr", k)?)
        .map(drop)
}

/// `MPI_Pack_size`.
pub fn pack_size(count: i64, h: TypeHandle) -> Result<i64> {
    let t = type_committed("pack_size", h)?;
    let n = u64::try_from(count)
        .map_err(|_| Error::new(ErrorClass::Count, format!("pack_size: count {count}")))?;
    Ok(pack::pack_size(&t, n)? as i64)
}

fn room(call: &str, need: u64, len: usize, position: usize) -> Result<()> {
    if (len as u64) < need.saturating_add(position as u64) {
        return Err(Error::new(
            ErrorClass::Truncate,
            format!("{call}: {need} bytes at position {position} do not fit {len} bytes"),
        ));
    }
    Ok(())
}

/// `MPI_Pack`: `count` elements of `h` at `inbuf` into `out` at `*position`, advancing it.
///
/// # Safety
/// `inbuf` must be valid for reads of every data byte of the `count` elements (as MPI
/// requires of the caller), none of them inside `out`.
pub unsafe fn pack_raw(
    inbuf: *const u8,
    count: u64,
    h: TypeHandle,
    out: &mut [u8],
    position: &mut usize,
) -> Result<()> {
    let t = type_committed("pack", h)?;
    let need = pack::pack_size(&t, count)?;
    room("pack", need, out.len(), *position)?;
    // SAFETY: the caller guarantees the elements' bytes; `out[*position..]` has `need` bytes.
    let n = unsafe {
        pack::pack_raw(
            &t,
            inbuf,
            count,
            0,
            &mut out[*position..*position + need as usize],
        )
    };
    *position += n;
    Ok(())
}

/// `MPI_Unpack`: `count` elements of `h` at `outbuf` from `input` at `*position`.
///
/// # Safety
/// `outbuf` must be valid for writes of every data byte of the `count` elements, none of
/// them inside `input`.
pub unsafe fn unpack_raw(
    input: &[u8],
    position: &mut usize,
    outbuf: *mut u8,
    count: u64,
    h: TypeHandle,
) -> Result<()> {
    let t = type_committed("unpack", h)?;
    let need = pack::pack_size(&t, count)?;
    room("unpack", need, input.len(), *position)?;
    // SAFETY: the caller guarantees the elements' bytes; `input[*position..]` has `need` bytes.
    let n = unsafe {
        pack::unpack_raw(
            &t,
            outbuf,
            count,
            0,
            &input[*position..*position + need as usize],
        )
    };
    *position += n;
    Ok(())
}

/// `MPI_Get_address`: an address as an `MPI_Aint`.
pub fn get_address<T: ?Sized>(location: *const T) -> i64 {
    location as *const u8 as usize as i64
}

/// `MPI_Aint_add`: `base + disp`, wrapping like address arithmetic.
pub fn aint_add(base: i64, disp: i64) -> i64 {
    base.wrapping_add(disp)
}

/// `MPI_Aint_diff`: `a - b`.
pub fn aint_diff(a: i64, b: i64) -> i64 {
    a.wrapping_sub(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::envelope::CombinerKind;

    const INT: TypeHandle = TypeHandle::of(Predefined::INT);
    const DOUBLE: TypeHandle = TypeHandle::of(Predefined::DOUBLE);

    #[test]
    fn predefined_ids_are_abi_values_with_names() {
        assert_eq!(INT.to_int(), 0x209);
        assert_eq!(type_size(DOUBLE).unwrap(), 8);
        assert_eq!(type_get_name(INT).unwrap(), "MPI_INT");
        assert_eq!(
            type_get_envelope(INT).unwrap().combiner,
            CombinerKind::Named
        );
        assert_eq!(
            type_size(TypeHandle::NULL).unwrap_err().class(),
            ErrorClass::Type
        );
        let mut i = INT;
        assert_eq!(type_free(&mut i).unwrap_err().class(), ErrorClass::Type);
        assert_eq!(
            type_get_extent(TypeHandle::of(Predefined::DOUBLE_INT)).unwrap(),
            (0, 16)
        );
        assert_eq!(
            type_size(TypeHandle::of(Predefined::DOUBLE_INT)).unwrap(),
            12
        );
    }

    #[test]
    fn a_freed_type_lives_on_in_the_operation_that_holds_it() {
        let mut v = type_vector(3, 1, 2, INT).unwrap();
        assert_eq!(
            pack_size(1, v).unwrap_err().class(),
            ErrorClass::Type,
            "not committed"
        );
        type_commit(v).unwrap();
        let held = type_committed("isend", v).unwrap();
        type_free(&mut v).unwrap();
        assert_eq!(v, TypeHandle::NULL);
        let src: Vec<u8> = (0..20).collect();
        let mut out = [0u8; 12];
        assert_eq!(pack::pack(&held, &src, 0, 1, 0, &mut out).unwrap(), 12);
        assert_eq!(out[4..8], [8, 9, 10, 11]);
        let mut again = v;
        assert_eq!(type_free(&mut again).unwrap_err().class(), ErrorClass::Type);
    }

    #[test]
    fn constructors_names_dup_and_contents() {
        let s = type_create_struct(&[1, 2], &[0, 8], &[INT, DOUBLE]).unwrap();
        assert_eq!(type_size(s).unwrap(), 20);
        assert_eq!(type_get_extent(s).unwrap(), (0, 24));
        type_set_name(s, "particle").unwrap();
        assert_eq!(type_get_name(s).unwrap(), "particle");
        type_commit(s).unwrap();
        let d = type_dup(s).unwrap();
        assert!(
            type_committed("send", d).is_ok(),
            "dup keeps the committed state"
        );
        assert_eq!(type_get_name(d).unwrap(), "");
        assert_eq!(type_get_envelope(d).unwrap().combiner, CombinerKind::Dup);
        let (c, ids) = type_get_contents(s).unwrap();
        assert_eq!(c.integers, vec![2, 1, 2]);
        assert_eq!(c.addresses, vec![0, 8]);
        assert_eq!(ids, vec![INT, DOUBLE]);
        let (_, inner) = type_get_contents(d).unwrap();
        assert_ne!(inner[0], s, "a derived old type comes back under a new id");
        assert_eq!(type_size(inner[0]).unwrap(), 20);
        let r = type_create_resized(INT, -4, 16).unwrap();
        assert_eq!(type_get_extent(r).unwrap(), (-4, 16));
        let sub = type_create_subarray(&[4, 4], &[2, 2], &[1, 1], Order::C, INT).unwrap();
        assert_eq!(type_get_true_extent(sub).unwrap(), (20, 24));
        let da = type_create_darray(
            2,
            1,
            &[4],
            &[Distribution::Block(None)],
            &[2],
            Order::C,
            INT,
        )
        .unwrap();
        assert_eq!(type_get_true_extent(da).unwrap(), (8, 8));
        assert_eq!(get_elements(12, s).unwrap(), Some(2));
        assert_eq!(get_elements(6, s).unwrap(), None);
        assert_eq!(get_count(40, s).unwrap(), Some(2));
        assert_eq!(get_count(12, s).unwrap(), None);
        assert_eq!(
            type_indexed(&[1], &[0, 1], INT).unwrap_err().class(),
            ErrorClass::Arg
        );
        assert_eq!(
            type_contiguous(-1, INT).unwrap_err().class(),
            ErrorClass::Count
        );
        for mut h in [s, d, r, sub, da, inner[0]] {
            type_free(&mut h).unwrap();
        }
    }

    #[test]
    fn pack_and_unpack_advance_the_position() {
        let v = type_vector(2, 1, 2, INT).unwrap();
        type_commit(v).unwrap();
        let src = [1i32, 2, 3, 4];
        let mut out = [0u8; 12];
        let mut pos = 4;
        // SAFETY: `src` holds the 16 bytes the vector reaches.
        unsafe { pack_raw(src.as_ptr() as *const u8, 1, v, &mut out, &mut pos).unwrap() };
        assert_eq!(pos, 12);
        assert_eq!(
            out[4..12],
            [1i32.to_ne_bytes(), 3i32.to_ne_bytes()].concat()[..]
        );
        // SAFETY: as above.
        let e =
            unsafe { pack_raw(src.as_ptr() as *const u8, 1, v, &mut out, &mut pos) }.unwrap_err();
        assert_eq!(e.class(), ErrorClass::Truncate);
        let mut dst = [0i32; 4];
        let mut pos = 4;
        // SAFETY: `dst` holds the 16 bytes the vector reaches.
        unsafe { unpack_raw(&out, &mut pos, dst.as_mut_ptr() as *mut u8, 1, v).unwrap() };
        assert_eq!(dst, [1, 0, 3, 0]);
        let a = [0u64; 4];
        assert_eq!(aint_diff(get_address(&a[3]), get_address(&a[0])), 24);
        assert_eq!(aint_add(get_address(&a[0]), 8), get_address(&a[1]));
        let mut v = v;
        type_free(&mut v).unwrap();
    }

    #[test]
    fn attributes_are_copied_on_dup_and_deleted_on_free() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static DELETED: AtomicUsize = AtomicUsize::new(0);
        let copy: TypeCopyFn = Arc::new(|_, _, extra, v| Ok(Some(v + extra)));
        let del: TypeDeleteFn = Arc::new(|_, _, _, v| {
            DELETED.fetch_add(v, Ordering::SeqCst);
            Ok(())
        });
        let mut k = type_create_keyval(TypeCopyPolicy::Call(copy), Some(del), 100).unwrap();
        let mut t = type_contiguous(2, INT).unwrap();
        type_set_attr(t, k, 1).unwrap();
        assert_eq!(type_get_attr(t, k).unwrap(), Some(1));
        let mut d = type_dup(t).unwrap();
        assert_eq!(type_get_attr(d, k).unwrap(), Some(101));
        type_set_attr(t, k, 2).unwrap();
        assert_eq!(
            DELETED.load(Ordering::SeqCst),
            1,
            "the replaced value was deleted"
        );
        type_free(&mut t).unwrap();
        assert_eq!(DELETED.load(Ordering::SeqCst), 3);
        type_delete_attr(d, k).unwrap();
        assert_eq!(type_get_attr(d, k).unwrap(), None);
        assert_eq!(DELETED.load(Ordering::SeqCst), 104);
        type_set_attr(INT, k, 7).unwrap();
        assert_eq!(
            type_get_attr(INT, k).unwrap(),
            Some(7),
            "predefined types cache too"
        );
        type_delete_attr(INT, k).unwrap();
        type_free_keyval(&mut k).unwrap();
        assert_eq!(
            type_set_attr(d, k, 1).unwrap_err().class(),
            ErrorClass::Keyval
        );
        type_free(&mut d).unwrap();
    }

    #[test]
    fn f90_types_keep_one_id_and_match_size_is_predefined() {
        let a = type_create_f90_real(10, envelope::UNDEFINED).unwrap();
        assert_eq!(a, type_create_f90_real(10, envelope::UNDEFINED).unwrap());
        let mut b = a;
        assert_eq!(type_free(&mut b).unwrap_err().class(), ErrorClass::Type);
        assert_eq!(
            type_get_envelope(a).unwrap().combiner,
            CombinerKind::F90Real
        );
        assert_eq!(
            type_match_size(TypeClass::Integer, 8).unwrap(),
            TypeHandle::of(Predefined::INTEGER8)
        );
    }
}
