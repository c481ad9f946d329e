#!/usr/bin/env python3
"""Writes oxmpi's Fortran bindings from the mpi.h being installed.

    gen.py MPI_H OUT_DIR [FORTRAN_COMPILER]

OUT_DIR receives:
  mpifort_gen.c  the F77-style wrappers (mpi_send_ ...) over the C ABI, one per C function
                 mpi.h declares, except those runtime.c writes by hand
  mpif.h         constants, sentinels and function types for `include 'mpif.h'` (fixed and
                 free form)
  mpi.f90        the `mpi` module: mpif.h and, for gfortran, explicit interfaces
  mpi_f08.f90    the mpi_f08 module (derived-type handles, optional ierror, assumed-rank
                 choice buffers) over the same wrappers
  mpif08_gen.c   the choice-buffer glue mpi_f08 needs (CFI descriptors to addresses)
  bindings.txt   every Fortran binding written, and every C function skipped with the reason

Reading the header that is installed (rather than a list kept by hand) means a C function
added to mpi.h gets its Fortran binding at the next install, or a line in bindings.txt
saying why it has none.
"""

import re
import sys

# The generator runs from the source tree: leave no __pycache__ there.
sys.dont_write_bytecode = True

HANDLES = {
    "MPI_Comm", "MPI_Datatype", "MPI_Errhandler", "MPI_File", "MPI_Group", "MPI_Info",
    "MPI_Message", "MPI_Op", "MPI_Request", "MPI_Session", "MPI_Win",
}
INTS = {"MPI_Aint", "MPI_Count", "MPI_Offset"}

# Written by hand in runtime.c (callbacks, argc/argv, attribute values as integers, varargs).
HANDWRITTEN = {
    "MPI_Init", "MPI_Init_thread", "MPI_Pcontrol", "MPI_Alloc_mem", "MPI_Buffer_detach",
    "MPI_Buffer_detach_c", "MPI_Comm_detach_buffer", "MPI_Comm_detach_buffer_c",
    "MPI_Op_create", "MPI_Op_free", "MPI_Comm_create_errhandler", "MPI_Comm_create_keyval",
    "MPI_Keyval_create", "MPI_Type_create_keyval", "MPI_Comm_set_attr", "MPI_Comm_get_attr",
    "MPI_Attr_put", "MPI_Attr_get", "MPI_Type_set_attr", "MPI_Type_get_attr",
    "MPI_Win_get_attr", "MPI_Win_create_errhandler", "MPI_Win_create_keyval", "MPI_Win_set_attr",
    "MPI_Session_create_errhandler", "MPI_Session_detach_buffer", "MPI_Session_detach_buffer_c",
}
# C-only by the standard: conversions between the languages' handles.
C_ONLY = re.compile(r"_(c2f|f2c|toint|fromint|c2f08|f082c|f2f08|f082f)$")

# In-out lengths of an output string that count its NUL in C but not in Fortran
# (MPI_Info_get_string, MPI_Session_get_nth_pset).
IN_OUT_STRLEN = ("buflen", "pset_len")

# Arrays of handles: which argument gives their length.
ARRAY_LEN = ("count", "incount", "max_datatypes", "n")
# Attribute values are integers in Fortran, pointers in C: bound by hand (runtime.c) or not.
ATTR_VALUE = re.compile(r"_(get|set)_attr$|^MPI_Attr_(get|put)$")


class Skip(Exception):
    pass


class Param:
    def __init__(self, text):
        text = text.strip()
        self.const = text.startswith("const ")
        t = text.replace("const ", "")
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_ ]*?)\s*(\**)\s*([A-Za-z_][A-Za-z0-9_]*)\s*((\[[0-9]*\])*)$", t)
        if not m:
            raise Skip(f"cannot read parameter {text!r}")
        self.base = m.group(1).strip()
        self.ptr = len(m.group(2))
        self.name = m.group(3)
        dims = m.group(4)
        self.array = dims.count("[")
        self.text = text


class Func:
    def __init__(self, ret, name, params):
        self.ret = ret
        self.name = name
        self.params = params  # list of Param

    @property
    def fname(self):
        return self.name.lower() + "_"


def parse_header(path):
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)
    text = re.sub(r"\btypedef\b[^;]*;", " ", text)
    funcs, skipped = [], []
    for m in re.finditer(r"\b(int|double|MPI_Aint)\s+(MPI_[A-Za-z0-9_]+)\s*\(([^;]*?)\)\s*;", text):
        ret, name, args = m.group(1), m.group(2), " ".join(m.group(3).split())
        if C_ONLY.search(name):
            continue
        if "..." in args:
            if name in HANDWRITTEN:
                funcs.append(Func(ret, name, []))
            else:
                skipped.append((name, "variable arguments"))
            continue
        try:
            params = [] if args.strip() in ("", "void") else [Param(a) for a in args.split(",")]
        except Skip as e:
            skipped.append((name, str(e)))
            continue
        funcs.append(Func(ret, name, params))
    return funcs, skipped


def constants(path):
    """(name, integer value, handle type or None) for every integer or handle constant of
    mpi.h, in order."""
    text = open(path).read()
    out, seen, kinds = [], {}, {}
    for m in re.finditer(r"^#define\s+(MPI_[A-Z0-9_]+)\s+(.+?)\s*$", text, flags=re.M):
        name, val = m.group(1), m.group(2)
        v, kind = None, None
        m2 = re.match(r"^\(\((MPI_[A-Za-z_]+)\)\s*(0x[0-9a-fA-F]+|[0-9]+)\)$", val)
        if m2 and m2.group(1) in HANDLES:
            v, kind = int(m2.group(2), 0), m2.group(1)
        elif re.match(r"^\(?-?(0x[0-9a-fA-F]+|[0-9]+)\)?$", val):
            v = int(val.strip("()"), 0)
        elif val in seen:
            v, kind = seen[val], kinds[val]
        if v is None:
            continue
        if name in ("MPI_F_STATUS_SIZE", "MPI_F_SOURCE", "MPI_F_TAG", "MPI_F_ERROR"):
            continue
        seen[name], kinds[name] = v, kind
        out.append((name, v, kind))
    return out


# ------------------------------------------------------------------------------------------
# F77-style wrappers (C)
# ------------------------------------------------------------------------------------------

def array_len(f, p):
    names = [q.name for q in f.params if q.base in ("int", "MPI_Count") and q.ptr == 0 and q.array == 0]
    for n in ARRAY_LEN:
        if n in names:
            return "*" + n
    if p.name in ("sendtypes", "recvtypes") and "comm" in {q.name for q in f.params}:
        # The alltoallw forms: a datatype per peer (per neighbour), counted from the
        # communicator (runtime.c); an in-place send has no send types to read.
        send = int(p.name == "sendtypes")
        n = f"oxf_types_len(OXF_F2C(MPI_Comm, *comm), {int('eighbor' in f.name)}, {send})"
        if send and "sendbuf" in {q.name for q in f.params}:
            n = f"(oxf_buf(sendbuf) == MPI_IN_PLACE ? 0 : {n})"
        return n
    raise Skip(f"no length for the handle array {p.name}")


def request_out_only(f):
    """Whether the function's MPI_Request * only receives a new request. Only the calls that
    complete, start or free a request read it; reading a Fortran integer that is not yet a
    request could name another live one."""
    return not re.match(r"^(Wait|Test|Start|Cancel|Request_free)", f.name[4:])


def c_wrapper(f):
    """The C text of one F77 wrapper, or raises Skip."""
    if f.name in HANDWRITTEN:
        raise Skip("handwritten")
    if ATTR_VALUE.search(f.name):
        raise Skip("attribute values are integers in Fortran (needs a hand-written binding)")
    args, pre, call, post, strlens, cleanup = [], [], [], [], [], []
    for p in f.params:
        b, n = p.base, p.name
        if b == "int" and p.ptr == 1 and n in IN_OUT_STRLEN:
            # In C the string's length counts its NUL, in Fortran not (the standard).
            args.append(f"MPI_Fint *{n}")
            pre.append(f"int c_{n} = *{n} > 0 ? *{n} + 1 : 0;")
            post.append(f"if (*ierr == MPI_SUCCESS) *{n} = c_{n} > 0 ? c_{n} - 1 : 0;")
            call.append(f"&c_{n}")
        elif b in ("int",) and p.ptr == 0 and p.array == 0:
            args.append(f"MPI_Fint *{n}")
            call.append(f"*{n}")
        elif b == "int" and (p.ptr == 1 or p.array):
            args.append(f"MPI_Fint *{n}")
            cast = "(int (*)[3])" if p.array == 2 else ""
            if "weights" in n:
                call.append(f"oxf_weights({n})")
            elif "errcodes" in n:
                call.append(f"oxf_errcodes({n})")
            else:
                call.append(cast + n)
        elif b in INTS and p.ptr == 0 and p.array == 0:
            args.append(f"{b} *{n}")
            call.append(f"*{n}")
        elif b in INTS:
            args.append(f"{b} *{n}")
            call.append(n)
        elif b in HANDLES and p.ptr == 0 and p.array == 0:
            args.append(f"MPI_Fint *{n}")
            call.append(f"oxf_req_get(*{n})" if b == "MPI_Request" else f"OXF_F2C({b}, *{n})")
        elif b in HANDLES and p.ptr == 1 and p.array == 0:
            args.append(f"MPI_Fint *{n}")
            if b == "MPI_Request":
                if request_out_only(f):
                    pre.append(f"MPI_Request c_{n} = MPI_REQUEST_NULL;")
                    post.append(f"*{n} = oxf_req_new(c_{n});")
                else:
                    pre.append(f"MPI_Request c_{n} = oxf_req_get(*{n}), was_{n} = c_{n};")
                    post.append(f"oxf_req_update({n}, was_{n}, c_{n});")
            else:
                pre.append(f"{b} c_{n} = OXF_F2C({b}, *{n});")
                post.append(f"*{n} = OXF_C2F(c_{n});")
            call.append(f"&c_{n}")
        elif b in HANDLES and p.array == 1 and p.ptr == 0:
            length = array_len(f, p)
            req = b == "MPI_Request"
            # Requests keep what they stood for before the call (was_), to update the table.
            k = 2 if req else 1
            args.append(f"MPI_Fint *{n}")
            pre.append(f"int len_{n} = {length};")
            pre.append(f"if (len_{n} < 0) len_{n} = 0;")
            pre.append(f"{b} small_{n}[{k} * OXF_SMALL], *c_{n} = len_{n} <= OXF_SMALL ? small_{n} : malloc(sizeof *c_{n} * {k} * (size_t)len_{n});")
            pre.append(f"if (!c_{n}) {{ *ierr = MPI_ERR_NO_MEM; return; }}")
            if req:
                pre.append(f"{b} *was_{n} = c_{n} + len_{n};")
                pre.append(f"for (int i = 0; i < len_{n}; i++) c_{n}[i] = was_{n}[i] = oxf_req_get({n}[i]);")
                post.append(f"for (int i = 0; i < len_{n}; i++) oxf_req_update(&{n}[i], was_{n}[i], c_{n}[i]);")
            else:
                if not f.name.startswith("MPI_Type_get_contents"):
                    pre.append(f"for (int i = 0; i < len_{n}; i++) c_{n}[i] = OXF_F2C({b}, {n}[i]);")
                if not p.const:
                    post.append(f"for (int i = 0; i < len_{n}; i++) {n}[i] = OXF_C2F(c_{n}[i]);")
            cleanup.append(f"if (c_{n} != small_{n}) free(c_{n});")
            call.append(f"c_{n}")
        elif b == "MPI_Status" and p.ptr == 1:
            args.append(f"MPI_Fint *{n}")
            call.append(f"oxf_status({n})")
        elif b == "MPI_Status" and p.array == 1:
            args.append(f"MPI_Fint *{n}")
            call.append(f"oxf_statuses({n})")
        elif b == "void" and p.ptr == 1 and p.array == 0:
            args.append(f"{'const ' if p.const else ''}void *{n}")
            call.append(f"oxf_buf({n})")
        elif b == "char" and p.const and p.ptr + p.array == 1:
            args.append(f"const char *{n}")
            strlens.append(f"size_t {n}_len")
            pre.append(f"char *s_{n} = oxf_str_in({n}, {n}_len);")
            pre.append(f"if (!s_{n}) {{ *ierr = MPI_ERR_NO_MEM; return; }}")
            cleanup.append(f"free(s_{n});")
            call.append(f"s_{n}")
        elif b == "char" and p.ptr == 1 and p.array == 0 and not p.const:
            args.append(f"char *{n}")
            strlens.append(f"size_t {n}_len")
            pre.append(f"char *s_{n} = calloc(1, {n}_len + OXF_STR_MAX);")
            pre.append(f"if (!s_{n}) {{ *ierr = MPI_ERR_NO_MEM; return; }}")
            post.append(f"if (*ierr == MPI_SUCCESS) oxf_str_out({n}, {n}_len, s_{n});")
            cleanup.append(f"free(s_{n});")
            call.append(f"s_{n}")
        else:
            raise Skip(f"parameter {p.text!r}")
    # Fortran indices start at 1 (MPI_UNDEFINED stays).
    names = {p.name for p in f.params}
    if "index" in names:
        post.append("if (*ierr == MPI_SUCCESS && *index >= 0) *index += 1;")
    if "array_of_indices" in names and "outcount" in names:
        post.append("if (*ierr == MPI_SUCCESS && *outcount != MPI_UNDEFINED) for (int i = 0; i < *outcount; i++) array_of_indices[i] += 1;")
    # The body is pmpi_x_; mpi_x_ is its weak alias, which a profiling tool may define.
    alias = f"OXF_PROFILED({f.fname})\n"
    if f.ret == "double":
        if f.params:
            raise Skip("double function with arguments")
        return f"OXF_EXPORT double p{f.fname}(void) {{ return {f.name}(); }}\n" + alias
    if f.ret == "MPI_Aint":
        sig = ", ".join(args) or "void"
        return f"OXF_EXPORT MPI_Aint p{f.fname}({sig}) {{ return {f.name}({', '.join(call)}); }}\n" + alias
    f.sig = args + ["MPI_Fint *ierr"] + strlens
    sig = ", ".join(f.sig)
    body = [f"    {s}" for s in pre]
    body.append(f"    *ierr = {f.name}({', '.join(call)});")
    body += [f"    {s}" for s in post]
    body += [f"    {s}" for s in cleanup]
    return f"OXF_EXPORT void p{f.fname}({sig}) {{\n" + "\n".join(body) + "\n}\n" + alias


# ------------------------------------------------------------------------------------------
# mpif.h
# ------------------------------------------------------------------------------------------

def mpif_h(consts):
    # Column 7 onwards, at most 72 columns, comments with '!' in column 1: valid fixed and
    # free form.
    L = ["! mpif.h for oxmpi: MPI-5.0 standard ABI handle values as INTEGER.",
         "! Written by gen.py at install time; fixed and free form."]

    def decl(name, value):
        L.append(f"      integer {name}")
        L.append(f"      parameter ({name}={value})")

    decl("MPI_STATUS_SIZE", 8)
    decl("MPI_SOURCE", 1)
    decl("MPI_TAG", 2)
    decl("MPI_ERROR", 3)
    decl("MPI_ADDRESS_KIND", 8)
    decl("MPI_OFFSET_KIND", 8)
    decl("MPI_COUNT_KIND", 8)
    decl("MPI_INTEGER_KIND", 4)
    for name, v, _ in consts:
        decl(name, v)
    L.append("      logical MPI_SUBARRAYS_SUPPORTED")
    L.append("      parameter (MPI_SUBARRAYS_SUPPORTED=.false.)")
    L.append("      logical MPI_ASYNC_PROTECTS_NONBLOCKING")
    L.append("      parameter (MPI_ASYNC_PROTECTS_NONBLOCKING=.false.)")
    # Sentinels: recognised by address (common blocks the library defines).
    for var, dims, block in [
        ("MPI_BOTTOM", "", "mpi_fortran_bottom"),
        ("MPI_IN_PLACE", "", "mpi_fortran_in_place"),
        ("MPI_BUFFER_AUTOMATIC", "", "mpi_fortran_buffer_automatic"),
        ("MPI_STATUS_IGNORE", "(8)", "mpi_fortran_status_ignore"),
        ("MPI_STATUSES_IGNORE", "(8,1)", "mpi_fortran_statuses_ignore"),
        ("MPI_ERRCODES_IGNORE", "(1)", "mpi_fortran_errcodes_ignore"),
        ("MPI_UNWEIGHTED", "(1)", "mpi_fortran_unweighted"),
        ("MPI_WEIGHTS_EMPTY", "(1)", "mpi_fortran_weights_empty"),
    ]:
        L.append(f"      integer {var}{dims}")
        L.append(f"      common /{block}/ {var}")
        L.append(f"      save /{block}/")
    L.append("      double precision MPI_WTIME, MPI_WTICK")
    L.append("      external MPI_WTIME, MPI_WTICK")
    L.append("      integer(kind=8) MPI_AINT_ADD, MPI_AINT_DIFF")
    L.append("      external MPI_AINT_ADD, MPI_AINT_DIFF")
    for fn in ["MPI_COMM_NULL_COPY_FN", "MPI_COMM_DUP_FN", "MPI_COMM_NULL_DELETE_FN",
               "MPI_NULL_COPY_FN", "MPI_DUP_FN", "MPI_NULL_DELETE_FN",
               "MPI_TYPE_NULL_COPY_FN", "MPI_TYPE_DUP_FN", "MPI_TYPE_NULL_DELETE_FN",
               "MPI_WIN_NULL_COPY_FN", "MPI_WIN_DUP_FN", "MPI_WIN_NULL_DELETE_FN"]:
        L.append(f"      external {fn}")
    for line in L:
        assert len(line) <= 72, line
    return "\n".join(L) + "\n"


# int arguments that are LOGICAL in Fortran.
LOGICAL = {"flag", "commute", "high", "reorder", "is_set"}
# int arrays that are LOGICAL arrays in Fortran (gfortran's LOGICAL is a 4-byte 0 or 1, so the
# F77 wrappers pass them through as ints).
LOGICAL_ARRAYS = {"periods", "remain_dims"}


def mpi_interface(f):
    """The explicit interface of one F77 routine for the `mpi` module (None: leave it
    implicit). Choice buffers take anything through gfortran's NO_ARG_CHECK."""
    if f.ret != "int" or f.name in HANDWRITTEN or not hasattr(f, "sig"):
        return None
    name = f.name.upper()
    decls, gcc = [], []
    for p in f.params:
        b, n = p.base, p.name
        if b == "int":
            ty = "logical" if n in LOGICAL and p.array == 0 or n in LOGICAL_ARRAYS else "integer"
            dim = "(3, *)" if p.array == 2 else "(*)" if p.array else ""
        elif b in INTS:
            ty, dim = "integer(kind=MPI_ADDRESS_KIND)", "(*)" if p.array else ""
        elif b in HANDLES:
            ty, dim = "integer", "(*)" if p.array else ""
        elif b == "MPI_Status":
            ty, dim = "integer", "(MPI_STATUS_SIZE, *)" if p.array else "(MPI_STATUS_SIZE)"
        elif b == "void":
            gcc.append(n)
            ty, dim = "type(*)", ", dimension(*)"
        elif b == "char":
            ty, dim = "character(len=*)", ""
        else:
            return None
        if dim.startswith(","):
            decls.append(f"{ty}{dim} :: {n}")
        else:
            decls.append(f"{ty} :: {n}{dim}")
    args = [p.name for p in f.params] + ["ierror"]
    L = ["        subroutine " + name + "(" + ", ".join(args) + ")"]
    if len(L[0]) > 120:
        L = ["        subroutine " + name + "(" + ", &\n                ".join(args) + ")"]
    L.append("            import :: MPI_ADDRESS_KIND, MPI_STATUS_SIZE")
    L += [f"            !GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}" for n in gcc]
    L += [f"            {d}" for d in decls]
    L.append("            integer :: ierror")
    L.append(f"        end subroutine {name}")
    return "\n".join(L)


def mpi_module(funcs, fc_is_gfortran):
    L = ["! The `mpi` module of oxmpi, written by gen.py at install time: mpif.h's constants and",
         "! sentinels, and explicit interfaces for the routines. Built by the Fortran compiler",
         "! found at install time: module files are compiler-specific.",
         "module mpi",
         "    implicit none",
         "    include 'mpif.h'"]
    if fc_is_gfortran:
        ifaces = [i for i in (mpi_interface(f) for f in funcs) if i]
        L.append("    interface")
        L += ifaces
        L.append("    end interface")
    L.append("end module mpi")
    return "\n".join(L) + "\n"


def main():
    header, out = sys.argv[1], sys.argv[2]
    # Choice buffers need NO_ARG_CHECK (gfortran); other compilers get implicit interfaces.
    gfortran = len(sys.argv) > 3 and "gfortran" in sys.argv[3]
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    funcs, skipped = parse_header(header)
    c = ['/* Written by gen.py from mpi.h at install time: the F77-style Fortran bindings. */',
         '#include "runtime.h"', '#include <stdlib.h>', '']
    done = []
    for f in funcs:
        try:
            c.append(c_wrapper(f))
            done.append(f.name)
        except Skip as e:
            if str(e) == "handwritten":
                done.append(f.name)
            else:
                skipped.append((f.name, str(e)))
    open(f"{out}/mpifort_gen.c", "w").write("\n".join(c))
    open(f"{out}/mpif.h", "w").write(mpif_h(constants(header)))
    open(f"{out}/mpi.f90", "w").write(mpi_module(funcs, gfortran))
    import mpif08
    names08, skipped08, indistinct = mpif08.write([f for f in funcs if hasattr(f, "sig") or f.name in HANDWRITTEN], constants(header), out)
    with open(f"{out}/bindings.txt", "w") as r:
        r.write(f"# F77 / mpi bindings ({len(done)}):\n")
        r.writelines(f"{n}\n" for n in sorted(done))
        r.write(f"# mpi_f08 bindings ({len(names08)}):\n")
        r.writelines(f"{n}\n" for n in sorted(names08))
        r.write(f"# mpi_f08 large-count procedures reached by their _c name only ({len(indistinct)}):\n")
        r.write("# (every integer kind is 8 bytes here, so the generic cannot tell them from the\n"
                "# default form: MPI_COUNT_KIND == MPI_ADDRESS_KIND)\n")
        r.writelines(f"{n}\n" for n in indistinct)
        r.write(f"# skipped ({len(skipped)}):\n")
        r.writelines(f"{n}: {why}\n" for n, why in skipped)
        r.write(f"# not in mpi_f08 ({len(skipped08)}):\n")
        r.writelines(f"{n}: {why}\n" for n, why in skipped08)
    for n, why in skipped:
        print(f"gen.py: no Fortran binding for {n}: {why}", file=sys.stderr)


if __name__ == "__main__":
    main()
