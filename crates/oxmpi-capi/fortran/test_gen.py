"""Unit tests of gen.py's and mpif08.py's pure logic (run by tests/fortran.rs:
python3 -m unittest discover -s crates/oxmpi-capi/fortran)."""

import os
import tempfile
import unittest

import gen
import mpif08


def func(decl):
    """A Func from one C declaration."""
    with tempfile.NamedTemporaryFile("w", suffix=".h", delete=False) as h:
        h.write(decl)
    try:
        funcs, skipped = gen.parse_header(h.name)
    finally:
        os.unlink(h.name)
    assert not skipped, skipped
    return funcs[0]


class Parse(unittest.TestCase):
    def test_parameters(self):
        f = func("int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);")
        kinds = [(p.base, p.ptr, p.array) for p in f.params]
        self.assertEqual(kinds, [("MPI_Group", 0, 0), ("int", 0, 0), ("int", 0, 2), ("MPI_Group", 1, 0)])

    def test_typedefs_and_conversions_are_not_functions(self):
        with tempfile.NamedTemporaryFile("w", suffix=".h", delete=False) as h:
            h.write("typedef int MPI_Copy_function(MPI_Comm a, int b);\n"
                    "MPI_Fint MPI_Comm_c2f(MPI_Comm comm);\nint MPI_Barrier(MPI_Comm comm);\n")
        try:
            funcs, _ = gen.parse_header(h.name)
        finally:
            os.unlink(h.name)
        self.assertEqual([f.name for f in funcs], ["MPI_Barrier"])


class Wrappers(unittest.TestCase):
    def test_only_completing_calls_read_a_request(self):
        for name, out_only in [("MPI_Isend", True), ("MPI_Comm_idup", True), ("MPI_Send_init", True),
                               ("MPI_Wait", False), ("MPI_Test", False), ("MPI_Start", False),
                               ("MPI_Cancel", False), ("MPI_Request_free", False)]:
            self.assertEqual(gen.request_out_only(gen.Func("int", name, [])), out_only, name)

    def test_isend_makes_a_new_request_number(self):
        c = gen.c_wrapper(func("int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, "
                               "int dest, int tag, MPI_Comm comm, MPI_Request *request);"))
        self.assertIn("*request = oxf_req_new(c_request);", c)
        self.assertNotIn("oxf_req_get(*request)", c)
        self.assertIn("oxf_buf(buf)", c)

    def test_indices_become_one_based(self):
        c = gen.c_wrapper(func("int MPI_Waitany(int count, MPI_Request array_of_requests[], "
                               "int *index, MPI_Status *status);"))
        self.assertIn("*index += 1", c)
        self.assertIn("oxf_req_update(&array_of_requests[i]", c)

    def test_strings_take_hidden_lengths(self):
        c = gen.c_wrapper(func("int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen);"))
        self.assertIn("size_t comm_name_len", c)
        self.assertIn("oxf_str_out(comm_name, comm_name_len", c)

    def test_bodies_are_pmpi_and_the_mpi_names_weak_aliases(self):
        c = gen.c_wrapper(func("int MPI_Barrier(MPI_Comm comm);"))
        self.assertIn("OXF_EXPORT void pmpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr)", c)
        self.assertIn("OXF_PROFILED(mpi_barrier_)", c)
        c = gen.c_wrapper(func("double MPI_Wtime(void);"))
        self.assertIn("double pmpi_wtime_(void)", c)
        self.assertIn("OXF_PROFILED(mpi_wtime_)", c)

    def test_alltoallw_types_are_counted_from_the_communicator(self):
        c = gen.c_wrapper(func("int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], "
                               "const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, "
                               "const int recvcounts[], const int rdispls[], "
                               "const MPI_Datatype recvtypes[], MPI_Comm comm);"))
        self.assertIn("oxf_buf(sendbuf) == MPI_IN_PLACE ? 0 : oxf_types_len(OXF_F2C(MPI_Comm, *comm), 0, 1)", c)
        self.assertIn("int len_recvtypes = oxf_types_len(OXF_F2C(MPI_Comm, *comm), 0, 0);", c)
        c = gen.c_wrapper(func("int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], "
                               "const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, "
                               "const int recvcounts[], const MPI_Aint rdispls[], "
                               "const MPI_Datatype recvtypes[], MPI_Comm comm);"))
        self.assertIn("oxf_types_len(OXF_F2C(MPI_Comm, *comm), 1, 0)", c)

    def test_periods_are_logical_arrays(self):
        f = func("int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm);")
        gen.c_wrapper(f)
        self.assertIn("logical :: remain_dims(*)", gen.mpi_interface(f))
        body = mpif08.proc(f)[0]
        self.assertIn("logical, intent(in) :: remain_dims(*)", body)

    def test_what_a_table_cannot_bind_is_skipped(self):
        for decl in ["int MPI_File_set_attr(MPI_File fh, int keyval, void *val);",
                     "int MPI_Comm_spawn(const char *command, char *argv[], int n, MPI_Info info, "
                     "int root, MPI_Comm comm, MPI_Comm *inter, int errcodes[]);",
                     "int MPI_File_create_errhandler(MPI_File_errhandler_function *fn, MPI_Errhandler *e);"]:
            with self.assertRaises(gen.Skip, msg=decl):
                gen.c_wrapper(func(decl))

    def test_window_callbacks_and_attributes_are_handwritten(self):
        # runtime.c binds them (trampolines, keyval state, integer values), mpif08.py too.
        for name in ["MPI_Win_create_errhandler", "MPI_Win_create_keyval", "MPI_Win_set_attr",
                     "MPI_Win_get_attr"]:
            self.assertIn(name, gen.HANDWRITTEN)
            self.assertIn(name, mpif08.HAND_NAMES)
            self.assertEqual(mpif08.NOT_GENERATED.get(name), "hand-written")
        text = gen.mpif_h([])
        for fn in ["MPI_WIN_NULL_COPY_FN", "MPI_WIN_DUP_FN", "MPI_WIN_NULL_DELETE_FN"]:
            self.assertIn(f"external {fn}", text)
            self.assertIn(f"subroutine {fn}(", mpif08.HAND_PROCS)


class Headers(unittest.TestCase):
    def test_mpif_h_is_fixed_form(self):
        text = gen.mpif_h([("MPI_COMM_WORLD", 0x101, "MPI_Comm"), ("MPI_ANY_SOURCE", -1, None)])
        for line in text.splitlines():
            self.assertLessEqual(len(line), 72)
            self.assertTrue(line.startswith("!") or line.startswith("      "), line)
        self.assertIn("parameter (MPI_COMM_WORLD=257)", text)
        self.assertIn("common /mpi_fortran_bottom/ MPI_BOTTOM", text)

    def test_f08_generics_tell_kinds_apart(self):
        self.assertEqual(mpif08.distinguish("integer(kind=MPI_COUNT_KIND), intent(in) :: lb"),
                         mpif08.distinguish("integer(kind=MPI_ADDRESS_KIND) :: lb"))
        self.assertNotEqual(mpif08.distinguish("integer, intent(in) :: count"),
                            mpif08.distinguish("integer(kind=MPI_COUNT_KIND), intent(in) :: count"))
        self.assertNotEqual(mpif08.distinguish("integer :: a(*)"), mpif08.distinguish("integer :: a"))

    def test_indistinguishable_large_count_forms_keep_their_own_name(self):
        fs = [func("int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);"),
              func("int MPI_Type_get_extent_c(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent);")]
        for f in fs:
            gen.c_wrapper(f)
        with tempfile.TemporaryDirectory() as d:
            done, skipped, indistinct = mpif08.write(fs, [], d)
            text = open(os.path.join(d, "mpi_f08.f90")).read()
        self.assertEqual(indistinct, ["MPI_Type_get_extent_c"])
        self.assertIn("MPI_Type_get_extent_c", done)
        self.assertIn("interface MPI_Type_get_extent_c\n        module procedure MPI_Type_get_extent_c_f08", text)
        self.assertIn("interface MPI_Type_get_extent\n        module procedure MPI_Type_get_extent_f08\n", text)


if __name__ == "__main__":
    unittest.main()
