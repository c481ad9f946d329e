"""The mpi_f08 module, written by gen.py from the functions it bound (see gen.py).

Each MPI_X becomes a generic interface over a module procedure MPI_X_f08 (MPI_X_f08ts when
it has choice buffers, as TS 29113 bindings are named) with derived-type handles,
type(MPI_Status), LOGICAL flags and an optional ierror. The procedure calls the F77 wrapper
of the same function (mpi_x_, bind(C) interface), or, with choice buffers, a C function in
mpif08_gen.c that takes the buffers' CFI descriptors (`type(*), dimension(..)`), checks they
are contiguous and passes their addresses on to the F77 wrapper.
"""

import re

HANDLES = ["MPI_Comm", "MPI_Datatype", "MPI_Errhandler", "MPI_File", "MPI_Group", "MPI_Info",
           "MPI_Message", "MPI_Op", "MPI_Request", "MPI_Session", "MPI_Win"]
KINDS = {"MPI_Aint": "MPI_ADDRESS_KIND", "MPI_Count": "MPI_COUNT_KIND",
         "MPI_Offset": "MPI_OFFSET_KIND"}
# int arguments that are LOGICAL in Fortran.
LOGICAL = {"flag", "commute", "high", "reorder", "is_set"}
LOGICAL_ARRAYS = {"periods", "remain_dims"}
# Functions mpi_f08 writes by hand below (or leaves out, with the reason).
NOT_GENERATED = {
    "MPI_Init": "hand-written", "MPI_Init_thread": "hand-written", "MPI_Wtime": "hand-written",
    "MPI_Wtick": "hand-written", "MPI_Aint_add": "hand-written", "MPI_Aint_diff": "hand-written",
    "MPI_Comm_get_attr": "hand-written", "MPI_Comm_set_attr": "hand-written",
    "MPI_Op_create": "hand-written", "MPI_Op_free": "hand-written",
    "MPI_Comm_create_errhandler": "hand-written",
    "MPI_Comm_create_keyval": "hand-written",
    "MPI_Type_create_keyval": "hand-written",
    # Deprecated (MPI-2.0) but still in use: INTEGER attribute values and extra state.
    "MPI_Keyval_create": "hand-written",
    "MPI_Attr_put": "hand-written", "MPI_Attr_get": "hand-written",
    "MPI_Type_set_attr": "hand-written",
    "MPI_Type_get_attr": "hand-written",
    "MPI_Win_get_attr": "hand-written",
    "MPI_Win_set_attr": "hand-written",
    "MPI_Win_create_errhandler": "hand-written",
    "MPI_Session_create_errhandler": "hand-written",
    "MPI_Win_create_keyval": "hand-written",
    "MPI_Alloc_mem": "hand-written",
    # The detaches give the buffer's address back as TYPE(C_PTR).
    "MPI_Buffer_detach": "hand-written",
    "MPI_Buffer_detach_c": "hand-written",
    "MPI_Comm_detach_buffer": "hand-written",
    "MPI_Comm_detach_buffer_c": "hand-written",
    "MPI_Session_detach_buffer": "hand-written",
    "MPI_Session_detach_buffer_c": "hand-written",
    "MPI_Pcontrol": "hand-written",
}


class Skip(Exception):
    pass


def wrap(line, indent):
    """Free-form continuation for lines over 132 columns."""
    out, cur = [], indent
    for tok in line.strip().split(", "):
        piece = tok if cur == indent else ", " + tok
        if len(cur) + len(piece) > 120:
            out.append(cur + ", &")
            cur = indent + "    " + tok
        else:
            cur += piece
    out.append(cur)
    return "\n".join(out)


def distinguish(decl):
    """What tells a dummy argument apart in a generic: its type and kind, and whether it is
    an array (every integer kind but the default is 8 bytes here)."""
    ty, name = (x.strip() for x in decl.split("::"))
    ty = ty.split(",")[0].strip()
    for k in KINDS.values():
        ty = ty.replace(k, "8")
    return ty, "(" in name


def proc(f):
    """(Fortran module procedure, bind(C) interface, C glue or None, specific name, generic
    name, dummy argument types)."""
    if f.name in NOT_GENERATED:
        raise Skip(NOT_GENERATED[f.name])
    if f.ret != "int":
        raise Skip("function result")
    short = f.name[4:]
    has_buf = any(p.base == "void" and p.ptr == 1 for p in f.params)
    if f.name.endswith("_c"):
        # Large-count procedures join the generic of the same name without _c.
        spec = f"{f.name}_f08ts" if has_buf else f"{f.name}_f08"
    else:
        spec = f"{f.name}_f08ts" if has_buf else f"{f.name}_f08"
    target = f"oxf08_{short.lower()}" if has_buf else f"mpi_{short.lower()}_"
    iface_name = f"oxf77_{short.lower()}"
    dummies, decls, idecls, actuals, pre, post, lens, ilens = [], [], [], [], [], [], [], []
    for p in f.params:
        b, n = p.base, p.name
        if n.lower() in ("ierror", "ierr"):
            raise Skip("argument named ierror")
        dummies.append(n)
        if b == "int" and p.ptr == 0 and p.array == 0:
            if n in LOGICAL:
                decls.append(f"logical, intent(in) :: {n}")
                pre.append(f"i_{n} = merge(1, 0, {n})")
                decls.append(f"integer :: i_{n}")
                actuals.append(f"i_{n}")
            else:
                decls.append(f"integer, intent(in) :: {n}")
                actuals.append(n)
            idecls.append(f"integer(c_int) :: {n}")
        elif b == "int" and p.ptr == 1 and p.array == 0:
            if n in LOGICAL:
                decls.append(f"logical, intent(out) :: {n}")
                decls.append(f"integer :: i_{n}")
                post.append(f"{n} = i_{n} /= 0")
                actuals.append(f"i_{n}")
            else:
                decls.append(f"integer :: {n}")
                actuals.append(n)
            idecls.append(f"integer(c_int) :: {n}")
        elif b == "int" and p.array == 1 and n in LOGICAL_ARRAYS:
            # Default LOGICAL is a 4-byte 0 or 1 with gfortran: the F77 wrapper reads ints.
            intent = ", intent(in)" if p.const else ""
            decls.append(f"logical{intent} :: {n}(*)")
            idecls.append(f"logical :: {n}(*)")
            actuals.append(n)
        elif b == "int" and p.array == 1:
            decls.append(f"integer :: {n}(*)")
            idecls.append(f"integer(c_int) :: {n}(*)")
            actuals.append(n)
        elif b == "int" and p.array == 2:
            decls.append(f"integer :: {n}(3, *)")
            idecls.append(f"integer(c_int) :: {n}(3, *)")
            actuals.append(n)
        elif b in KINDS:
            k = KINDS[b]
            dim = "(*)" if p.array else ""
            intent = ", intent(in)" if p.ptr == 0 and p.array == 0 else ""
            decls.append(f"integer(kind={k}){intent} :: {n}{dim}")
            idecls.append(f"integer(c_int64_t) :: {n}{dim}")
            actuals.append(n)
        elif b in HANDLES:
            dim = "(*)" if p.array else ""
            intent = ", intent(in)" if p.ptr == 0 and p.array == 0 else ""
            decls.append(f"type({b}){intent} :: {n}{dim}")
            idecls.append(f"type({b}) :: {n}{dim}")
            actuals.append(n)
        elif b == "MPI_Status":
            dim = "(*)" if p.array else ""
            decls.append(f"type(MPI_Status) :: {n}{dim}")
            idecls.append(f"type(MPI_Status) :: {n}{dim}")
            actuals.append(n)
        elif b == "void" and p.ptr == 1:
            asy = ", asynchronous" if (short[0] == "I" and short[1].isupper()) or short.endswith("_init") else ""
            if short.startswith("Buffer_attach") or short in ("Win_create", "Win_attach"):
                # The library keeps the address: TARGET tells gfortran it escapes (else it
                # may assume no pointer made later, as MPI_Buffer_detach's, can equal it).
                asy = ", asynchronous, target"
            decls.append(f"type(*), dimension(..){asy} :: {n}")
            idecls.append(f"type(*), dimension(..) :: {n}")
            actuals.append(n)
        elif b == "char":
            intent = ", intent(in)" if p.const else ""
            decls.append(f"character(len=*){intent} :: {n}")
            idecls.append(f"character(kind=c_char) :: {n}(*)")
            actuals.append(n)
            lens.append(f"len({n}, kind=c_size_t)")
            ilens.append(f"{n}_len")
        else:
            raise Skip(f"parameter {p.text!r}")
    dummies.append("ierror")
    decls.append("integer, optional, intent(out) :: ierror")
    decls.append("integer :: ierr")
    args = actuals + ["ierr"] + lens
    body = [wrap(f"    subroutine {spec}({', '.join(dummies)})", "    ")]
    body += [f"        {d}" for d in decls]
    body += [f"        {s}" for s in pre]
    body.append(wrap(f"        call {iface_name}({', '.join(args)})", "        "))
    body += [f"        {s}" for s in post]
    body.append("        if (present(ierror)) ierror = ierr")
    body.append(f"    end subroutine {spec}")
    idummies = [p.name for p in f.params] + ["ierr"] + ilens
    iface = [wrap(f"        subroutine {iface_name}({', '.join(idummies)}) bind(C, name=\"{target}\")", "        ")]
    iface.append("            import")
    iface += [f"            {d}" for d in idecls]
    iface.append("            integer(c_int) :: ierr")
    iface += [f"            integer(c_size_t), value :: {l}" for l in ilens]
    iface.append(f"        end subroutine {iface_name}")
    glue = None
    if has_buf:
        cargs, calls, checks = [], [], []
        for a in f.sig:
            m = re.match(r"^(.*?)(\w+)$", a)
            ty, n = m.group(1).strip(), m.group(2)
            if ty.endswith("void *"):
                cargs.append(f"CFI_cdesc_t *{n}")
                calls.append(f"{n}->base_addr")
                checks.append(f"if ({n}->rank > 0 && !CFI_is_contiguous({n})) {{ *ierr = MPI_ERR_BUFFER; return; }}")
            else:
                cargs.append(a)
                calls.append(n)
        glue = (f"void mpi_{short.lower()}_({', '.join(f.sig)});\n"
                f"OXF_EXPORT void {target}({', '.join(cargs)}) {{\n"
                + "".join(f"    {c}\n" for c in checks)
                + f"    mpi_{short.lower()}_({', '.join(calls)});\n}}\n")
    generic = f.name[:-2] if f.name.endswith("_c") else f.name
    types = tuple(distinguish(decls[i]) for i in range(len(decls)) if decls[i].split("::")[1].strip().split("(")[0] in dummies)
    return "\n".join(body), "\n".join(iface), glue, spec, generic, types


HEAD = """! The mpi_f08 module of oxmpi, written by gen.py at install time from the installed mpi.h.
! Built by the Fortran compiler found at install time: module files are compiler-specific.
module mpi_f08
    ! Only what the module needs, none of it re-exported: a program that uses mpi_f08 and
    ! takes c_loc or c_associated from iso_c_binding itself would otherwise see them twice
    ! (gfortran 12 stops with an internal compiler error on that).
    use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_size_t, c_char, c_double, &
        c_intptr_t, c_ptr, c_funptr, c_funloc
    implicit none
    private :: c_int, c_int64_t, c_size_t, c_char, c_double, c_intptr_t, c_ptr, c_funptr, c_funloc
"""


def write(funcs, consts, out):
    F, I, G, generics, done, skipped, indistinct = [], [], [], {}, [], [], []
    made = {}
    for f in funcs:
        try:
            made[f.name] = proc(f)
        except Skip as e:
            if str(e) != "hand-written":
                skipped.append((f.name, str(e)))
    for name, (body, iface, glue, spec, generic, types) in made.items():
        base = made.get(generic) if generic != name else None
        if base is not None and base[5] == types:
            # MPI_COUNT_KIND is MPI_ADDRESS_KIND here, so the generic could not tell the two
            # apart: the large-count procedure is reached by its own name only.
            generic = name
            indistinct.append(name)
        F.append(body)
        I.append(iface)
        if glue:
            G.append(glue)
        generics.setdefault(generic, []).append(spec)
        done.append(name)
    done += HAND_NAMES + ["MPI_Wtime", "MPI_Wtick", "MPI_Aint_add", "MPI_Aint_diff", "MPI_Pcontrol"]
    done += [spec[:-4] for specs in HAND_SPECIFICS.values() for spec in specs[1:]]
    L = [HEAD]
    L.append("    integer, parameter :: MPI_ADDRESS_KIND = 8, MPI_OFFSET_KIND = 8, MPI_COUNT_KIND = 8")
    L.append("    integer, parameter :: MPI_INTEGER_KIND = 4, MPI_STATUS_SIZE = 8")
    L.append("    integer, parameter :: MPI_SOURCE = 1, MPI_TAG = 2, MPI_ERROR = 3")
    L.append("    logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .false.")
    L.append("    logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.")
    for h in HANDLES:
        L.append(f"    type, bind(C) :: {h}")
        L.append("        integer :: MPI_VAL")
        L.append(f"    end type {h}")
    L.append("    type, bind(C) :: MPI_Status")
    L.append("        integer :: MPI_SOURCE, MPI_TAG, MPI_ERROR")
    L.append("        integer, private :: internal(5)")
    L.append("    end type MPI_Status")
    for name, v, kind in consts:
        if kind:
            L.append(f"    type({kind}), parameter :: {name} = {kind}({v})")
        else:
            L.append(f"    integer, parameter :: {name} = {v}")
    # Sentinels: the same storage as mpif.h's common blocks (defined in runtime.c).
    for var, ty, sym in [
        ("MPI_BOTTOM", "integer", "mpi_fortran_bottom_"),
        ("MPI_IN_PLACE", "integer", "mpi_fortran_in_place_"),
        ("MPI_BUFFER_AUTOMATIC", "integer", "mpi_fortran_buffer_automatic_"),
        ("MPI_STATUS_IGNORE", "type(MPI_Status)", "mpi_fortran_status_ignore_"),
        ("MPI_STATUSES_IGNORE(1)", "type(MPI_Status)", "mpi_fortran_statuses_ignore_"),
        ("MPI_ERRCODES_IGNORE(1)", "integer", "mpi_fortran_errcodes_ignore_"),
        ("MPI_UNWEIGHTED(1)", "integer", "mpi_fortran_unweighted_"),
        ("MPI_WEIGHTS_EMPTY(1)", "integer", "mpi_fortran_weights_empty_"),
    ]:
        L.append(f"    {ty}, bind(C, name=\"{sym}\") :: {var}")
    # Comparisons of handles.
    eqs = [f"oxf08_eq_{h[4:].lower()}" for h in HANDLES]
    nes = [f"oxf08_ne_{h[4:].lower()}" for h in HANDLES]
    L.append("    interface operator(==)\n" + wrap(f"        module procedure {', '.join(eqs)}", "        ") + "\n    end interface")
    L.append("    interface operator(/=)\n" + wrap(f"        module procedure {', '.join(nes)}", "        ") + "\n    end interface")
    for name, specs in sorted(generics.items()):
        L.append(f"    interface {name}\n        module procedure {', '.join(specs)}\n    end interface {name}")
    for name in HAND_NAMES:
        specs = ", ".join(HAND_SPECIFICS.get(name, [f"{name}_f08"]))
        L.append(f"    interface {name}\n        module procedure {specs}\n    end interface {name}")
    L.append("    abstract interface")
    L.append("        subroutine MPI_User_function(invec, inoutvec, len, datatype)")
    L.append("            import")
    L.append("            type(c_ptr), value :: invec, inoutvec")
    L.append("            integer :: len")
    L.append("            type(MPI_Datatype) :: datatype")
    L.append("        end subroutine MPI_User_function")
    L.append(HAND_ABSTRACT)
    L.append("    end interface")
    L.append("    interface")
    L += I
    L.append(HAND_IFACES)
    L.append(detach_ifaces())
    L.append(errhandler_ifaces())
    L.append("    end interface")
    L.append("contains")
    for h in HANDLES:
        s = h[4:].lower()
        L.append(f"    elemental logical function oxf08_eq_{s}(a, b)\n        type({h}), intent(in) :: a, b\n"
                 f"        oxf08_eq_{s} = a%MPI_VAL == b%MPI_VAL\n    end function oxf08_eq_{s}")
        L.append(f"    elemental logical function oxf08_ne_{s}(a, b)\n        type({h}), intent(in) :: a, b\n"
                 f"        oxf08_ne_{s} = a%MPI_VAL /= b%MPI_VAL\n    end function oxf08_ne_{s}")
    L += F
    L.append(HAND_PROCS)
    L.append(detach_procs())
    L.append(errhandler_procs())
    L.append("end module mpi_f08")
    open(f"{out}/mpi_f08.f90", "w").write("\n".join(L) + "\n")
    glue = ['/* Written by gen.py: the choice-buffer glue of mpi_f08 (CFI descriptors). */',
            '#include "runtime.h"', '#include <ISO_Fortran_binding.h>', ''] + G
    glue.append(HAND_GLUE)
    open(f"{out}/mpif08_gen.c", "w").write("\n".join(glue))
    return done, skipped, indistinct


HAND_NAMES = ["MPI_Init", "MPI_Init_thread", "MPI_Comm_get_attr", "MPI_Comm_set_attr",
              "MPI_Op_create", "MPI_Op_free", "MPI_Comm_create_errhandler",
              "MPI_Comm_create_keyval", "MPI_Type_create_keyval", "MPI_Type_set_attr",
              "MPI_Type_get_attr", "MPI_Alloc_mem", "MPI_Buffer_detach", "MPI_Keyval_create",
              "MPI_Attr_put", "MPI_Attr_get", "MPI_Win_get_attr", "MPI_Win_set_attr",
              "MPI_Win_create_errhandler", "MPI_Win_create_keyval", "MPI_Comm_detach_buffer",
              "MPI_Session_create_errhandler", "MPI_Session_detach_buffer"]

# Hand-written generics with a large-count specific beside the default one (the size
# argument's kind tells them apart).
HAND_SPECIFICS = {
    "MPI_Buffer_detach": ["MPI_Buffer_detach_f08", "MPI_Buffer_detach_c_f08"],
    "MPI_Comm_detach_buffer": ["MPI_Comm_detach_buffer_f08", "MPI_Comm_detach_buffer_c_f08"],
    "MPI_Session_detach_buffer": ["MPI_Session_detach_buffer_f08",
                                  "MPI_Session_detach_buffer_c_f08"],
}

HAND_ABSTRACT = """        subroutine MPI_Comm_errhandler_function(comm, error_code)
            import
            type(MPI_Comm) :: comm
            integer :: error_code
        end subroutine MPI_Comm_errhandler_function
        subroutine MPI_Comm_copy_attr_function(oldcomm, comm_keyval, extra_state, &
                attribute_val_in, attribute_val_out, flag, ierror)
            import
            type(MPI_Comm) :: oldcomm
            integer :: comm_keyval, ierror
            integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
            logical :: flag
        end subroutine MPI_Comm_copy_attr_function
        subroutine MPI_Comm_delete_attr_function(comm, comm_keyval, attribute_val, extra_state, ierror)
            import
            type(MPI_Comm) :: comm
            integer :: comm_keyval, ierror
            integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
        end subroutine MPI_Comm_delete_attr_function
        subroutine MPI_Type_copy_attr_function(oldtype, type_keyval, extra_state, &
                attribute_val_in, attribute_val_out, flag, ierror)
            import
            type(MPI_Datatype) :: oldtype
            integer :: type_keyval, ierror
            integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
            logical :: flag
        end subroutine MPI_Type_copy_attr_function
        subroutine MPI_Copy_function(oldcomm, keyval, extra_state, attribute_val_in, &
                attribute_val_out, flag, ierr)
            ! As in mpif.h (deprecated): every argument an INTEGER but the flag.
            integer :: oldcomm, keyval, extra_state, attribute_val_in, attribute_val_out, ierr
            logical :: flag
        end subroutine MPI_Copy_function
        subroutine MPI_Delete_function(comm, keyval, attribute_val, extra_state, ierr)
            integer :: comm, keyval, attribute_val, extra_state, ierr
        end subroutine MPI_Delete_function
        subroutine MPI_Type_delete_attr_function(datatype, type_keyval, attribute_val, extra_state, ierror)
            import
            type(MPI_Datatype) :: datatype
            integer :: type_keyval, ierror
            integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
        end subroutine MPI_Type_delete_attr_function
        subroutine MPI_Win_errhandler_function(win, error_code)
            import
            type(MPI_Win) :: win
            integer :: error_code
        end subroutine MPI_Win_errhandler_function
        subroutine MPI_Session_errhandler_function(session, error_code)
            import
            type(MPI_Session) :: session
            integer :: error_code
        end subroutine MPI_Session_errhandler_function
        subroutine MPI_Win_copy_attr_function(oldwin, win_keyval, extra_state, &
                attribute_val_in, attribute_val_out, flag, ierror)
            import
            type(MPI_Win) :: oldwin
            integer :: win_keyval, ierror
            integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
            logical :: flag
        end subroutine MPI_Win_copy_attr_function
        subroutine MPI_Win_delete_attr_function(win, win_keyval, attribute_val, extra_state, ierror)
            import
            type(MPI_Win) :: win
            integer :: win_keyval, ierror
            integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
        end subroutine MPI_Win_delete_attr_function"""

# The objects whose buffer mpi_f08 detaches by hand (the address comes back as TYPE(C_PTR)):
# (MPI name part, dummy argument, handle type).
DETACH_OBJECTS = [("Comm", "comm", "MPI_Comm"), ("Session", "session", "MPI_Session")]


# The kinds of error handler mpi_f08 creates by hand: (MPI name part, F77 name part, what
# the handler receives).
ERRHANDLER_KINDS = [("Comm", "comm", "communicator"), ("Win", "win", "window"),
                    ("Session", "session", "session")]


def errhandler_ifaces():
    """The bind(C) interfaces of the F77 mpi_<kind>_create_errhandler_."""
    return "\n".join(f"""        subroutine oxf77_{k}_create_errhandler(fn, errhandler, ierr) bind(C, name="mpi_{k}_create_errhandler_")
            import
            type(c_funptr), value :: fn
            type(MPI_Errhandler) :: errhandler
            integer(c_int) :: ierr
        end subroutine oxf77_{k}_create_errhandler""" for _, k, _ in ERRHANDLER_KINDS)


def errhandler_procs():
    """MPI_<Kind>_create_errhandler_f08, through the F77 binding's trampolines."""
    return "\n".join(f"""    subroutine MPI_{n}_create_errhandler_f08({k}_errhandler_fn, errhandler, ierror)
        procedure(MPI_{n}_errhandler_function) :: {k}_errhandler_fn
        type(MPI_Errhandler), intent(out) :: errhandler
        integer, optional, intent(out) :: ierror
        integer :: ierr
        ! The F77 trampolines pass the {what} and the code by reference, as here.
        call oxf77_{k}_create_errhandler(c_funloc({k}_errhandler_fn), errhandler, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_{n}_create_errhandler_f08""" for n, k, what in ERRHANDLER_KINDS)


def detach_ifaces():
    """The bind(C) interfaces of the glue's oxf08_<object>_detach_buffer(_c)."""
    L = []
    for name, arg, t in DETACH_OBJECTS:
        for sfx, size in (("", "integer(c_int) :: size, ierr"),
                          ("_c", "integer(c_int64_t) :: size\n            integer(c_int) :: ierr")):
            sub = f"oxf08_{arg}_detach_buffer{sfx}"
            L.append(f"""        subroutine {sub}({arg}, addr, size, ierr) &
                bind(C, name="{sub}")
            import
            type({t}) :: {arg}
            type(c_ptr) :: addr
            {size}
        end subroutine {sub}""")
    return "\n".join(L)


def detach_procs():
    """MPI_<object>_detach_buffer_f08 and its _c_f08 specific."""
    L = []
    for name, arg, t in DETACH_OBJECTS:
        for sfx, kind in (("", "integer"), ("_c", "integer(kind=MPI_COUNT_KIND)")):
            sub = f"MPI_{name}_detach_buffer{sfx}_f08"
            L.append(f"""    subroutine {sub}({arg}, buffer_addr, size, ierror)
        type({t}), intent(in) :: {arg}
        type(c_ptr), intent(out) :: buffer_addr
        {kind}, intent(out) :: size
        integer, optional, intent(out) :: ierror
        integer :: ierr
        type({t}) :: h
        h = {arg}
        call oxf08_{arg}_detach_buffer{sfx}(h, buffer_addr, size, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine {sub}""")
    return "\n".join(L)


HAND_IFACES = """        subroutine oxf77_init(ierr) bind(C, name="mpi_init_")
            import
            integer(c_int) :: ierr
        end subroutine oxf77_init
        subroutine oxf77_init_thread(required, provided, ierr) bind(C, name="mpi_init_thread_")
            import
            integer(c_int) :: required, provided, ierr
        end subroutine oxf77_init_thread
        real(c_double) function oxf77_wtime() bind(C, name="mpi_wtime_")
            import
        end function oxf77_wtime
        real(c_double) function oxf77_wtick() bind(C, name="mpi_wtick_")
            import
        end function oxf77_wtick
        integer(c_int64_t) function oxf77_aint_add(base, disp) bind(C, name="mpi_aint_add_")
            import
            integer(c_int64_t) :: base, disp
        end function oxf77_aint_add
        integer(c_int64_t) function oxf77_aint_diff(addr1, addr2) bind(C, name="mpi_aint_diff_")
            import
            integer(c_int64_t) :: addr1, addr2
        end function oxf77_aint_diff
        subroutine oxf77_pcontrol(level, ierr) bind(C, name="mpi_pcontrol_")
            import
            integer(c_int) :: level, ierr
        end subroutine oxf77_pcontrol
        subroutine oxf77_comm_get_attr(comm, keyval, val, flag, ierr) bind(C, name="mpi_comm_get_attr_")
            import
            type(MPI_Comm) :: comm
            integer(c_int) :: keyval, flag, ierr
            integer(c_int64_t) :: val
        end subroutine oxf77_comm_get_attr
        subroutine oxf77_comm_set_attr(comm, keyval, val, ierr) bind(C, name="mpi_comm_set_attr_")
            import
            type(MPI_Comm) :: comm
            integer(c_int) :: keyval, ierr
            integer(c_int64_t) :: val
        end subroutine oxf77_comm_set_attr
        subroutine oxf08_op_create(fn, commute, op, ierr) bind(C, name="oxf08_op_create")
            import
            type(c_funptr), value :: fn
            integer(c_int) :: commute, ierr
            type(MPI_Op) :: op
        end subroutine oxf08_op_create
        subroutine oxf77_op_free(op, ierr) bind(C, name="mpi_op_free_")
            import
            type(MPI_Op) :: op
            integer(c_int) :: ierr
        end subroutine oxf77_op_free
        subroutine oxf77_comm_create_keyval(copy, del, keyval, extra, ierr) bind(C, name="mpi_comm_create_keyval_")
            import
            type(c_funptr), value :: copy, del
            integer(c_int) :: keyval, ierr
            integer(c_int64_t) :: extra
        end subroutine oxf77_comm_create_keyval
        subroutine oxf77_type_create_keyval(copy, del, keyval, extra, ierr) bind(C, name="mpi_type_create_keyval_")
            import
            type(c_funptr), value :: copy, del
            integer(c_int) :: keyval, ierr
            integer(c_int64_t) :: extra
        end subroutine oxf77_type_create_keyval
        subroutine oxf77_type_set_attr(t, keyval, val, ierr) bind(C, name="mpi_type_set_attr_")
            import
            type(MPI_Datatype) :: t
            integer(c_int) :: keyval, ierr
            integer(c_int64_t) :: val
        end subroutine oxf77_type_set_attr
        subroutine oxf77_type_get_attr(t, keyval, val, flag, ierr) bind(C, name="mpi_type_get_attr_")
            import
            type(MPI_Datatype) :: t
            integer(c_int) :: keyval, flag, ierr
            integer(c_int64_t) :: val
        end subroutine oxf77_type_get_attr
        subroutine oxf77_alloc_mem(size, info, baseptr, ierr) bind(C, name="mpi_alloc_mem_")
            import
            integer(c_int64_t) :: size
            type(MPI_Info) :: info
            type(c_ptr) :: baseptr
            integer(c_int) :: ierr
        end subroutine oxf77_alloc_mem
        subroutine oxf08_buffer_detach(addr, size, ierr) bind(C, name="oxf08_buffer_detach")
            import
            type(c_ptr) :: addr
            integer(c_int) :: size, ierr
        end subroutine oxf08_buffer_detach
        subroutine oxf08_buffer_detach_c(addr, size, ierr) bind(C, name="oxf08_buffer_detach_c")
            import
            type(c_ptr) :: addr
            integer(c_int64_t) :: size
            integer(c_int) :: ierr
        end subroutine oxf08_buffer_detach_c
        subroutine oxf77_keyval_create(copy, del, keyval, extra, ierr) bind(C, name="mpi_keyval_create_")
            import
            type(c_funptr), value :: copy, del
            integer(c_int) :: keyval, extra, ierr
        end subroutine oxf77_keyval_create
        subroutine oxf77_attr_put(comm, keyval, val, ierr) bind(C, name="mpi_attr_put_")
            import
            type(MPI_Comm) :: comm
            integer(c_int) :: keyval, val, ierr
        end subroutine oxf77_attr_put
        subroutine oxf77_attr_get(comm, keyval, val, flag, ierr) bind(C, name="mpi_attr_get_")
            import
            type(MPI_Comm) :: comm
            integer(c_int) :: keyval, val, flag, ierr
        end subroutine oxf77_attr_get
        subroutine oxf77_win_get_attr(win, keyval, val, flag, ierr) bind(C, name="mpi_win_get_attr_")
            import
            type(MPI_Win) :: win
            integer(c_int) :: keyval, flag, ierr
            integer(c_int64_t) :: val
        end subroutine oxf77_win_get_attr
        subroutine oxf77_win_set_attr(win, keyval, val, ierr) bind(C, name="mpi_win_set_attr_")
            import
            type(MPI_Win) :: win
            integer(c_int) :: keyval, ierr
            integer(c_int64_t) :: val
        end subroutine oxf77_win_set_attr
        subroutine oxf77_win_create_keyval(copy, del, keyval, extra, ierr) bind(C, name="mpi_win_create_keyval_")
            import
            type(c_funptr), value :: copy, del
            integer(c_int) :: keyval, ierr
            integer(c_int64_t) :: extra
        end subroutine oxf77_win_create_keyval"""

HAND_PROCS = """    subroutine MPI_Init_f08(ierror)
        integer, optional, intent(out) :: ierror
        integer :: ierr
        call oxf77_init(ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Init_f08
    subroutine MPI_Init_thread_f08(required, provided, ierror)
        integer, intent(in) :: required
        integer, intent(out) :: provided
        integer, optional, intent(out) :: ierror
        integer :: ierr
        call oxf77_init_thread(required, provided, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Init_thread_f08
    double precision function MPI_Wtime()
        MPI_Wtime = oxf77_wtime()
    end function MPI_Wtime
    double precision function MPI_Wtick()
        MPI_Wtick = oxf77_wtick()
    end function MPI_Wtick
    integer(kind=MPI_ADDRESS_KIND) function MPI_Aint_add(base, disp)
        integer(kind=MPI_ADDRESS_KIND), intent(in) :: base, disp
        integer(kind=MPI_ADDRESS_KIND) :: b, d
        b = base
        d = disp
        MPI_Aint_add = oxf77_aint_add(b, d)
    end function MPI_Aint_add
    integer(kind=MPI_ADDRESS_KIND) function MPI_Aint_diff(addr1, addr2)
        integer(kind=MPI_ADDRESS_KIND), intent(in) :: addr1, addr2
        integer(kind=MPI_ADDRESS_KIND) :: a, b
        a = addr1
        b = addr2
        MPI_Aint_diff = oxf77_aint_diff(a, b)
    end function MPI_Aint_diff
    ! MPI_Pcontrol has no ierror in mpi_f08.
    subroutine MPI_Pcontrol(level)
        integer, intent(in) :: level
        integer :: l, ierr
        l = level
        call oxf77_pcontrol(l, ierr)
    end subroutine MPI_Pcontrol
    subroutine MPI_Comm_get_attr_f08(comm, comm_keyval, attribute_val, flag, ierror)
        type(MPI_Comm), intent(in) :: comm
        integer, intent(in) :: comm_keyval
        integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
        logical, intent(out) :: flag
        integer, optional, intent(out) :: ierror
        integer :: ierr, iflag
        call oxf77_comm_get_attr(comm, comm_keyval, attribute_val, iflag, ierr)
        flag = iflag /= 0
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Comm_get_attr_f08
    subroutine MPI_Comm_set_attr_f08(comm, comm_keyval, attribute_val, ierror)
        type(MPI_Comm), intent(in) :: comm
        integer, intent(in) :: comm_keyval
        integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val
        integer, optional, intent(out) :: ierror
        integer :: ierr
        call oxf77_comm_set_attr(comm, comm_keyval, attribute_val, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Comm_set_attr_f08
    subroutine MPI_Op_create_f08(user_fn, commute, op, ierror)
        procedure(MPI_User_function) :: user_fn
        logical, intent(in) :: commute
        type(MPI_Op), intent(out) :: op
        integer, optional, intent(out) :: ierror
        integer :: ierr
        call oxf08_op_create(c_funloc(user_fn), merge(1, 0, commute), op, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Op_create_f08
    subroutine MPI_Op_free_f08(op, ierror)
        type(MPI_Op), intent(inout) :: op
        integer, optional, intent(out) :: ierror
        integer :: ierr
        call oxf77_op_free(op, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Op_free_f08
    subroutine MPI_Comm_create_keyval_f08(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, &
            extra_state, ierror)
        procedure(MPI_Comm_copy_attr_function) :: comm_copy_attr_fn
        procedure(MPI_Comm_delete_attr_function) :: comm_delete_attr_fn
        integer, intent(out) :: comm_keyval
        integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state
        integer, optional, intent(out) :: ierror
        integer :: ierr
        integer(kind=MPI_ADDRESS_KIND) :: extra
        extra = extra_state
        call oxf77_comm_create_keyval(c_funloc(comm_copy_attr_fn), c_funloc(comm_delete_attr_fn), &
            comm_keyval, extra, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Comm_create_keyval_f08
    subroutine MPI_Type_create_keyval_f08(type_copy_attr_fn, type_delete_attr_fn, type_keyval, &
            extra_state, ierror)
        procedure(MPI_Type_copy_attr_function) :: type_copy_attr_fn
        procedure(MPI_Type_delete_attr_function) :: type_delete_attr_fn
        integer, intent(out) :: type_keyval
        integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state
        integer, optional, intent(out) :: ierror
        integer :: ierr
        integer(kind=MPI_ADDRESS_KIND) :: extra
        extra = extra_state
        call oxf77_type_create_keyval(c_funloc(type_copy_attr_fn), c_funloc(type_delete_attr_fn), &
            type_keyval, extra, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Type_create_keyval_f08
    subroutine MPI_Type_set_attr_f08(datatype, type_keyval, attribute_val, ierror)
        type(MPI_Datatype), intent(in) :: datatype
        integer, intent(in) :: type_keyval
        integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val
        integer, optional, intent(out) :: ierror
        integer :: ierr
        type(MPI_Datatype) :: t
        integer(kind=MPI_ADDRESS_KIND) :: val
        t = datatype
        val = attribute_val
        call oxf77_type_set_attr(t, type_keyval, val, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Type_set_attr_f08
    subroutine MPI_Type_get_attr_f08(datatype, type_keyval, attribute_val, flag, ierror)
        type(MPI_Datatype), intent(in) :: datatype
        integer, intent(in) :: type_keyval
        integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
        logical, intent(out) :: flag
        integer, optional, intent(out) :: ierror
        integer :: ierr, iflag
        type(MPI_Datatype) :: t
        t = datatype
        call oxf77_type_get_attr(t, type_keyval, attribute_val, iflag, ierr)
        flag = iflag /= 0
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Type_get_attr_f08
    subroutine MPI_Alloc_mem_f08(size, info, baseptr, ierror)
        integer(kind=MPI_ADDRESS_KIND), intent(in) :: size
        type(MPI_Info), intent(in) :: info
        type(c_ptr), intent(out) :: baseptr
        integer, optional, intent(out) :: ierror
        integer :: ierr
        integer(kind=MPI_ADDRESS_KIND) :: n
        type(MPI_Info) :: i
        n = size
        i = info
        call oxf77_alloc_mem(n, i, baseptr, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Alloc_mem_f08
    subroutine MPI_Buffer_detach_f08(buffer_addr, size, ierror)
        type(c_ptr), intent(out) :: buffer_addr
        integer, intent(out) :: size
        integer, optional, intent(out) :: ierror
        integer :: ierr
        call oxf08_buffer_detach(buffer_addr, size, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Buffer_detach_f08
    subroutine MPI_Buffer_detach_c_f08(buffer_addr, size, ierror)
        type(c_ptr), intent(out) :: buffer_addr
        integer(kind=MPI_COUNT_KIND), intent(out) :: size
        integer, optional, intent(out) :: ierror
        integer :: ierr
        call oxf08_buffer_detach_c(buffer_addr, size, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Buffer_detach_c_f08
    subroutine MPI_Keyval_create_f08(copy_fn, delete_fn, keyval, extra_state, ierror)
        procedure(MPI_Copy_function) :: copy_fn
        procedure(MPI_Delete_function) :: delete_fn
        integer, intent(out) :: keyval
        integer, intent(in) :: extra_state
        integer, optional, intent(out) :: ierror
        integer :: ierr, extra
        extra = extra_state
        call oxf77_keyval_create(c_funloc(copy_fn), c_funloc(delete_fn), keyval, extra, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Keyval_create_f08
    subroutine MPI_Attr_put_f08(comm, keyval, attribute_val, ierror)
        type(MPI_Comm), intent(in) :: comm
        integer, intent(in) :: keyval, attribute_val
        integer, optional, intent(out) :: ierror
        integer :: ierr, k, val
        type(MPI_Comm) :: c
        c = comm
        k = keyval
        val = attribute_val
        call oxf77_attr_put(c, k, val, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Attr_put_f08
    subroutine MPI_Attr_get_f08(comm, keyval, attribute_val, flag, ierror)
        type(MPI_Comm), intent(in) :: comm
        integer, intent(in) :: keyval
        integer, intent(out) :: attribute_val
        logical, intent(out) :: flag
        integer, optional, intent(out) :: ierror
        integer :: ierr, iflag, k
        type(MPI_Comm) :: c
        c = comm
        k = keyval
        call oxf77_attr_get(c, k, attribute_val, iflag, ierr)
        flag = iflag /= 0
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Attr_get_f08
    subroutine MPI_Win_get_attr_f08(win, win_keyval, attribute_val, flag, ierror)
        type(MPI_Win), intent(in) :: win
        integer, intent(in) :: win_keyval
        integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
        logical, intent(out) :: flag
        integer, optional, intent(out) :: ierror
        integer :: ierr, iflag, k
        type(MPI_Win) :: w
        w = win
        k = win_keyval
        call oxf77_win_get_attr(w, k, attribute_val, iflag, ierr)
        flag = iflag /= 0
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Win_get_attr_f08
    subroutine MPI_Win_set_attr_f08(win, win_keyval, attribute_val, ierror)
        type(MPI_Win), intent(in) :: win
        integer, intent(in) :: win_keyval
        integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val
        integer, optional, intent(out) :: ierror
        integer :: ierr, k
        type(MPI_Win) :: w
        integer(kind=MPI_ADDRESS_KIND) :: val
        w = win
        k = win_keyval
        val = attribute_val
        call oxf77_win_set_attr(w, k, val, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Win_set_attr_f08
    subroutine MPI_Win_create_keyval_f08(win_copy_attr_fn, win_delete_attr_fn, win_keyval, &
            extra_state, ierror)
        procedure(MPI_Win_copy_attr_function) :: win_copy_attr_fn
        procedure(MPI_Win_delete_attr_function) :: win_delete_attr_fn
        integer, intent(out) :: win_keyval
        integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state
        integer, optional, intent(out) :: ierror
        integer :: ierr
        integer(kind=MPI_ADDRESS_KIND) :: extra
        extra = extra_state
        call oxf77_win_create_keyval(c_funloc(win_copy_attr_fn), c_funloc(win_delete_attr_fn), &
            win_keyval, extra, ierr)
        if (present(ierror)) ierror = ierr
    end subroutine MPI_Win_create_keyval_f08
    ! The predefined callbacks, as Fortran procedures of the abstract interfaces.
    subroutine MPI_COMM_NULL_COPY_FN(oldcomm, comm_keyval, extra_state, attribute_val_in, &
            attribute_val_out, flag, ierror)
        type(MPI_Comm) :: oldcomm
        integer :: comm_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
        logical :: flag
        flag = .false.
        ierror = MPI_SUCCESS
    end subroutine MPI_COMM_NULL_COPY_FN
    subroutine MPI_COMM_DUP_FN(oldcomm, comm_keyval, extra_state, attribute_val_in, &
            attribute_val_out, flag, ierror)
        type(MPI_Comm) :: oldcomm
        integer :: comm_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
        logical :: flag
        attribute_val_out = attribute_val_in
        flag = .true.
        ierror = MPI_SUCCESS
    end subroutine MPI_COMM_DUP_FN
    subroutine MPI_COMM_NULL_DELETE_FN(comm, comm_keyval, attribute_val, extra_state, ierror)
        type(MPI_Comm) :: comm
        integer :: comm_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
        ierror = MPI_SUCCESS
    end subroutine MPI_COMM_NULL_DELETE_FN
    subroutine MPI_TYPE_NULL_COPY_FN(oldtype, type_keyval, extra_state, attribute_val_in, &
            attribute_val_out, flag, ierror)
        type(MPI_Datatype) :: oldtype
        integer :: type_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
        logical :: flag
        flag = .false.
        ierror = MPI_SUCCESS
    end subroutine MPI_TYPE_NULL_COPY_FN
    subroutine MPI_TYPE_DUP_FN(oldtype, type_keyval, extra_state, attribute_val_in, &
            attribute_val_out, flag, ierror)
        type(MPI_Datatype) :: oldtype
        integer :: type_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
        logical :: flag
        attribute_val_out = attribute_val_in
        flag = .true.
        ierror = MPI_SUCCESS
    end subroutine MPI_TYPE_DUP_FN
    subroutine MPI_TYPE_NULL_DELETE_FN(datatype, type_keyval, attribute_val, extra_state, ierror)
        type(MPI_Datatype) :: datatype
        integer :: type_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
        ierror = MPI_SUCCESS
    end subroutine MPI_TYPE_NULL_DELETE_FN
    subroutine MPI_WIN_NULL_COPY_FN(oldwin, win_keyval, extra_state, attribute_val_in, &
            attribute_val_out, flag, ierror)
        type(MPI_Win) :: oldwin
        integer :: win_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
        logical :: flag
        flag = .false.
        ierror = MPI_SUCCESS
    end subroutine MPI_WIN_NULL_COPY_FN
    subroutine MPI_WIN_DUP_FN(oldwin, win_keyval, extra_state, attribute_val_in, &
            attribute_val_out, flag, ierror)
        type(MPI_Win) :: oldwin
        integer :: win_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
        logical :: flag
        attribute_val_out = attribute_val_in
        flag = .true.
        ierror = MPI_SUCCESS
    end subroutine MPI_WIN_DUP_FN
    subroutine MPI_WIN_NULL_DELETE_FN(win, win_keyval, attribute_val, extra_state, ierror)
        type(MPI_Win) :: win
        integer :: win_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
        ierror = MPI_SUCCESS
    end subroutine MPI_WIN_NULL_DELETE_FN
    ! Those of the deprecated MPI_Keyval_create (INTEGER attribute values).
    subroutine MPI_NULL_COPY_FN(oldcomm, keyval, extra_state, attribute_val_in, &
            attribute_val_out, flag, ierr)
        integer :: oldcomm, keyval, extra_state, attribute_val_in, attribute_val_out, ierr
        logical :: flag
        flag = .false.
        ierr = MPI_SUCCESS
    end subroutine MPI_NULL_COPY_FN
    subroutine MPI_DUP_FN(oldcomm, keyval, extra_state, attribute_val_in, &
            attribute_val_out, flag, ierr)
        integer :: oldcomm, keyval, extra_state, attribute_val_in, attribute_val_out, ierr
        logical :: flag
        attribute_val_out = attribute_val_in
        flag = .true.
        ierr = MPI_SUCCESS
    end subroutine MPI_DUP_FN
    subroutine MPI_NULL_DELETE_FN(comm, keyval, attribute_val, extra_state, ierr)
        integer :: comm, keyval, attribute_val, extra_state, ierr
        ierr = MPI_SUCCESS
    end subroutine MPI_NULL_DELETE_FN"""

HAND_GLUE = """/* The detaches give the buffer's address back: TYPE(C_PTR) in mpi_f08. Automatic buffering
 * comes back as the address of the Fortran MPI_BUFFER_AUTOMATIC. */
static void oxf08_detached(MPI_Fint ierr, void **addr) {
    if (ierr == MPI_SUCCESS && *addr == MPI_BUFFER_AUTOMATIC)
        *addr = &mpi_fortran_buffer_automatic_;
}
OXF_EXPORT void oxf08_buffer_detach(void **addr, MPI_Fint *size, MPI_Fint *ierr) {
    *ierr = MPI_Buffer_detach(addr, size);
    oxf08_detached(*ierr, addr);
}
OXF_EXPORT void oxf08_buffer_detach_c(void **addr, MPI_Count *size, MPI_Fint *ierr) {
    *ierr = MPI_Buffer_detach_c(addr, size);
    oxf08_detached(*ierr, addr);
}
/* MPI_Comm_detach_buffer, MPI_Session_detach_buffer and their _c forms. */
#define OXF08_OBJECT_DETACH(kind, T, C)                                                       \
    OXF_EXPORT void oxf08_##kind##_detach_buffer(MPI_Fint *h, void **addr, MPI_Fint *size,     \
                                                 MPI_Fint *ierr) {                             \
        *ierr = MPI_##C##_detach_buffer(OXF_F2C(T, *h), addr, size);                           \
        oxf08_detached(*ierr, addr);                                                           \
    }                                                                                          \
    OXF_EXPORT void oxf08_##kind##_detach_buffer_c(MPI_Fint *h, void **addr, MPI_Count *size, \
                                                   MPI_Fint *ierr) {                           \
        *ierr = MPI_##C##_detach_buffer_c(OXF_F2C(T, *h), addr, size);                         \
        oxf08_detached(*ierr, addr);                                                           \
    }
OXF08_OBJECT_DETACH(comm, MPI_Comm, Comm)
OXF08_OBJECT_DETACH(session, MPI_Session, Session)

/* mpi_f08's MPI_User_function takes the buffers as TYPE(C_PTR) by value and the datatype as
 * TYPE(MPI_Datatype): the F77 slot's calling convention except for the two buffers, which
 * the F77 trampoline passes as addresses already. */
void mpi_op_create_(void (*fn)(void *, void *, MPI_Fint *, MPI_Fint *), MPI_Fint *commute,
                    MPI_Fint *op, MPI_Fint *ierr);
OXF_EXPORT void oxf08_op_create(void (*fn)(void *, void *, MPI_Fint *, MPI_Fint *),
                                MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierr) {
    mpi_op_create_(fn, commute, op, ierr);
}
"""
