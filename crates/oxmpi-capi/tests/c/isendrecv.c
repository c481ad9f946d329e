/* MPI_Isendrecv, MPI_Isendrecv_replace and MPI_Imrecv: a ring exchange (contiguous and
 * strided data), the status of the receive, PROC_NULL partners, a matched message received
 * without blocking, and argument errors. */
#include "check.h"

int main(int argc, char **argv) {
    int rank, size;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request r;
    MPI_Status st;

    /* Ring: send to the right, receive from the left. */
    int out[4], in[4] = {0};
    for (int k = 0; k < 4; k++) out[k] = 10 * rank + k;
    MUST(MPI_Isendrecv(out, 4, MPI_INT, right, 5, in, 4, MPI_INT, left, 5, MPI_COMM_WORLD, &r));
    MUST(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL, "isendrecv request not freed");
    for (int k = 0; k < 4; k++) CHECK(in[k] == 10 * left + k, "isendrecv %d: %d", k, in[k]);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 5, "isendrecv status %d %d", st.MPI_SOURCE, st.MPI_TAG);
    int cnt;
    MUST(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == 4, "isendrecv count %d", cnt);

    /* Wildcards, and two outstanding at once completed by waitall. */
    int a = rank, b = -1, c2 = 2 * rank, d = -1;
    MPI_Request two[2];
    MUST(MPI_Isendrecv(&a, 1, MPI_INT, right, 6, &b, 1, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &two[0]));
    MUST(MPI_Isendrecv(&c2, 1, MPI_INT, left, 7, &d, 1, MPI_INT, right, MPI_ANY_TAG, MPI_COMM_WORLD, &two[1]));
    MPI_Status sts[2];
    MUST(MPI_Waitall(2, two, sts));
    CHECK(b == left && d == 2 * right, "isendrecv pair %d %d", b, d);
    CHECK(sts[1].MPI_TAG == 7 && sts[1].MPI_SOURCE == right, "isendrecv any tag status");

    /* Replace in place, contiguous and every other int. */
    int buf[6];
    for (int k = 0; k < 6; k++) buf[k] = 100 * rank + k;
    MUST(MPI_Isendrecv_replace(buf, 6, MPI_INT, right, 8, left, 8, MPI_COMM_WORLD, &r));
    MUST(MPI_Wait(&r, &st));
    for (int k = 0; k < 6; k++) CHECK(buf[k] == 100 * left + k, "isendrecv_replace %d", k);
    MPI_Datatype every2;
    MUST(MPI_Type_vector(3, 1, 2, MPI_INT, &every2));
    MUST(MPI_Type_commit(&every2));
    for (int k = 0; k < 6; k++) buf[k] = k % 2 ? -1 : 100 * rank + k;
    MUST(MPI_Isendrecv_replace(buf, 1, every2, right, 9, left, 9, MPI_COMM_WORLD, &r));
    MUST(MPI_Wait(&r, &st));
    for (int k = 0; k < 6; k++)
        CHECK(buf[k] == (k % 2 ? -1 : 100 * left + k), "isendrecv_replace vector %d: %d", k, buf[k]);
    /* A strided receive through isendrecv. */
    int flat[3] = {rank, rank + 1, rank + 2};
    for (int k = 0; k < 6; k++) buf[k] = -2;
    MUST(MPI_Isendrecv(flat, 3, MPI_INT, right, 10, buf, 1, every2, left, 10, MPI_COMM_WORLD, &r));
    MUST(MPI_Wait(&r, &st));
    for (int k = 0; k < 6; k++)
        CHECK(buf[k] == (k % 2 ? -2 : left + k / 2), "isendrecv into vector %d: %d", k, buf[k]);
    MUST(MPI_Type_free(&every2));

    /* PROC_NULL partners complete at once with the PROC_NULL status. */
    MUST(MPI_Isendrecv(&a, 1, MPI_INT, MPI_PROC_NULL, 1, &b, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r));
    MUST(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "proc null source %d", st.MPI_SOURCE);

    /* Imrecv of a matched message. */
    int m = 1000 + rank, got = -1;
    MPI_Request sr;
    MUST(MPI_Isend(&m, 1, MPI_INT, right, 11, MPI_COMM_WORLD, &sr));
    MPI_Message msg;
    MUST(MPI_Mprobe(left, 11, MPI_COMM_WORLD, &msg, &st));
    MUST(MPI_Imrecv(&got, 1, MPI_INT, &msg, &r));
    CHECK(msg == MPI_MESSAGE_NULL, "imrecv left the message handle");
    MUST(MPI_Wait(&r, &st));
    MUST(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    CHECK(got == 1000 + left && st.MPI_SOURCE == left, "imrecv %d", got);
    MUST(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC, "mprobe proc null");
    MUST(MPI_Imrecv(&got, 1, MPI_INT, &msg, &r));
    MUST(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "imrecv no proc");

    /* Status fields set and read back. */
    MPI_Status made;
    MUST(MPI_Status_set_source(&made, 3));
    MUST(MPI_Status_set_tag(&made, 44));
    MUST(MPI_Status_set_error(&made, MPI_ERR_TRUNCATE));
    MUST(MPI_Status_set_elements(&made, MPI_DOUBLE, 5));
    MUST(MPI_Status_set_cancelled(&made, 1));
    int v1, v2, v3, flag;
    MUST(MPI_Status_get_source(&made, &v1));
    MUST(MPI_Status_get_tag(&made, &v2));
    MUST(MPI_Status_get_error(&made, &v3));
    CHECK(v1 == 3 && v2 == 44 && v3 == MPI_ERR_TRUNCATE, "status fields %d %d %d", v1, v2, v3);
    CHECK(made.MPI_SOURCE == 3 && made.MPI_TAG == 44, "status public fields");
    MUST(MPI_Get_count(&made, MPI_DOUBLE, &cnt));
    CHECK(cnt == 5, "set_elements count %d", cnt);
    MUST(MPI_Get_elements(&made, MPI_BYTE, &cnt));
    CHECK(cnt == 40, "set_elements bytes %d", cnt);
    MUST(MPI_Test_cancelled(&made, &flag));
    CHECK(flag == 1, "set_cancelled");
    MUST(MPI_Status_set_elements_x(&made, MPI_INT, 7));
    MUST(MPI_Get_count(&made, MPI_INT, &cnt));
    CHECK(cnt == 7, "set_elements_x %d", cnt);

    /* Errors. */
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int cls;
    cls = MPI_Isendrecv(&a, 1, MPI_INT, size, 1, &b, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_RANK, "isendrecv bad rank: %d", cls);
    cls = MPI_Isendrecv(&a, 1, MPI_INT, right, -1, &b, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_TAG, "isendrecv bad tag: %d", cls);
    cls = MPI_Isendrecv_replace(NULL, 1, MPI_INT, right, 1, left, 1, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_BUFFER, "isendrecv_replace null buffer: %d", cls);
    cls = MPI_Status_set_elements(&made, MPI_INT, -1);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_COUNT, "set_elements negative: %d", cls);
    cls = MPI_Status_get_tag(NULL, &v1);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_ARG, "get_tag null status: %d", cls);
    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MUST(MPI_Finalize());
    return 0;
}
