/* Error handlers and codes: MPI_ERRORS_RETURN, a user handler called with the code,
 * inheritance by dup, call_errhandler, added classes/codes/strings, error strings. */
#include <string.h>
#include "check.h"

static int calls = 0, last_code = 0;
static void handler(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    calls++;
    last_code = *code;
}

int main(int argc, char **argv) {
    int rank, cls, len, rc;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Errhandler eh, got;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));

    MUST(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got));
    CHECK(got == MPI_ERRORS_ARE_FATAL, "default handler");
    MUST(MPI_Comm_create_errhandler(handler, &eh));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    MUST(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got));
    CHECK(got == eh, "get returns the set handler");

    rc = MPI_Send(&rank, 1, MPI_INT, 12345, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_RANK && calls == 1 && last_code == MPI_ERR_RANK, "user handler: rc %d calls %d", rc, calls);

    MPI_Comm dup;
    MUST(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    rc = MPI_Send(&rank, 1, MPI_INT, 0, -5, dup);
    CHECK(rc == MPI_ERR_TAG && calls == 2, "inherited handler: rc %d calls %d", rc, calls);
    MUST(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "errhandler freed");
    rc = MPI_Send(&rank, 1, MPI_INT, 0, -5, dup);
    CHECK(calls == 3, "a freed handler stays attached");
    /* Each id MPI_Comm_get_errhandler gives is a reference of its own: freeing one leaves
     * the others live, and the handler lives while an object has it set. */
    MPI_Errhandler again, stale;
    MUST(MPI_Comm_get_errhandler(dup, &again));
    CHECK(again == got, "the same handler through the dup");
    stale = again;
    MUST(MPI_Errhandler_free(&got));
    MUST(MPI_Errhandler_free(&again));
    rc = MPI_Send(&rank, 1, MPI_INT, 0, -5, dup);
    CHECK(calls == 4, "every id freed, the handler stays attached");

    MUST(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    rc = MPI_Recv(&rank, -1, MPI_INT, 0, 0, dup, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_ERR_COUNT && calls == 4, "ERRORS_RETURN: rc %d", rc);

    int myclass, mycode, *lastused, found;
    MUST(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastused, &found));
    CHECK(found && *lastused == MPI_ERR_LASTCODE, "LASTUSEDCODE before any added: %d", *lastused);
    MUST(MPI_Add_error_class(&myclass));
    MUST(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastused, &found));
    CHECK(found && *lastused == myclass && myclass > MPI_ERR_LASTCODE, "LASTUSEDCODE %d after class %d", *lastused, myclass);
    MUST(MPI_Add_error_code(myclass, &mycode));
    MUST(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastused, &found));
    CHECK(found && *lastused == mycode, "LASTUSEDCODE %d after code %d", *lastused, mycode);
    MUST(MPI_Add_error_string(mycode, "the frobnicator is out of order"));
    MUST(MPI_Error_class(mycode, &cls));
    CHECK(cls == myclass, "added code's class %d", cls);
    MUST(MPI_Error_string(mycode, msg, &len));
    CHECK(strcmp(msg, "the frobnicator is out of order") == 0 && len == (int)strlen(msg), "added string %s", msg);
    MUST(MPI_Error_string(MPI_ERR_TRUNCATE, msg, &len));
    CHECK(len > 0, "standard string");
    MUST(MPI_Error_class(MPI_ERR_RANK, &cls));
    CHECK(cls == MPI_ERR_RANK, "standard class");

    MUST(MPI_Comm_create_errhandler(handler, &eh));
    MUST(MPI_Comm_set_errhandler(dup, eh));
    MUST(MPI_Comm_call_errhandler(dup, mycode));
    CHECK(calls == 5 && last_code == mycode, "call_errhandler passes the code");
    MUST(MPI_Errhandler_free(&eh));

    MUST(MPI_Comm_free(&dup));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    /* The first handler's last holder let it go: its id is no handler now. */
    rc = MPI_Errhandler_free(&stale);
    CHECK(rc == MPI_ERR_ERRHANDLER, "freed past its last reference: rc %d", rc);

    /* MPI-4.1 removals: a string before its code, codes before their class. */
    CHECK(MPI_Remove_error_class(myclass) != MPI_SUCCESS, "class with a code removed");
    CHECK(MPI_Remove_error_code(mycode) != MPI_SUCCESS, "code with a string removed");
    MUST(MPI_Remove_error_string(mycode));
    MUST(MPI_Error_string(mycode, msg, &len));
    CHECK(len == 0, "removed string reads empty: %s", msg);
    MUST(MPI_Remove_error_code(mycode));
    CHECK(MPI_Remove_error_code(mycode) != MPI_SUCCESS, "code removed twice");
    MUST(MPI_Remove_error_class(myclass));
    CHECK(MPI_Remove_error_class(myclass) != MPI_SUCCESS, "class removed twice");
    CHECK(MPI_Remove_error_class(MPI_ERR_RANK) != MPI_SUCCESS, "predefined class removed");
    MUST(MPI_Finalize());
    return 0;
}
