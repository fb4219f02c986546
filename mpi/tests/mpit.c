/* mpit.c: the tools interface. Before MPI_Init and after: ferry's
 * settings as control variables (listed, found by name, read: a number
 * the environment set, a name; writes refused), its counters as
 * performance variables (a session, a handle, eager sends counted;
 * start/stop, write and readreset refused as the variables' flags say),
 * the two categories, no events or sources, and the MPI_T error classes
 * returned (no handler runs). */
#include "check.h"
#include <string.h>

#define TEQ(call, want) do { int rc_ = (call); if (rc_ != (want)) \
    FAIL("%s returned %d, expected %s (%d)", #call, rc_, #want, (int)(want)); } while (0)

int main(int argc, char **argv) {
    int provided, n, idx, count;
    TEQ(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    setenv("FERRY_SPIN_US", "77", 1);
    TEQ(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    EQ(provided, MPI_THREAD_SINGLE);

    /* Control variables, before MPI_Init. */
    TEQ(MPI_T_cvar_get_num(&n), MPI_SUCCESS);
    TRUE(n >= 10);
    for (int i = 0; i < n; i++) {
        char name[128], desc[256];
        int name_len = 0, desc_len = sizeof desc, verbosity, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum et;
        TEQ(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &et, desc, &desc_len, &bind, &scope), MPI_SUCCESS);
        TRUE(name_len > 6);
        name_len = sizeof name;
        TEQ(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &et, desc, &desc_len, &bind, &scope), MPI_SUCCESS);
        TRUE(strncmp(name, "FERRY_", 6) == 0);
        EQ(name_len, (int)strlen(name) + 1);
        EQ(scope, MPI_T_SCOPE_READONLY);
        EQ(bind, MPI_T_BIND_NO_OBJECT);
        TRUE(et == MPI_T_ENUM_NULL);
        TRUE(dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_INT || dt == MPI_CHAR);
    }
    TEQ(MPI_T_cvar_get_index("FERRY_SPIN_US", &idx), MPI_SUCCESS);
    MPI_T_cvar_handle h;
    TEQ(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count), MPI_SUCCESS);
    EQ(count, 1);
    unsigned long long spin = 0;
    TEQ(MPI_T_cvar_read(h, &spin), MPI_SUCCESS);
    EQ(spin, 77);
    TEQ(MPI_T_cvar_write(h, &spin), MPI_T_ERR_CVAR_SET_NEVER);
    TEQ(MPI_T_cvar_handle_free(&h), MPI_SUCCESS);
    TRUE(h == MPI_T_CVAR_HANDLE_NULL);
    TEQ(MPI_T_cvar_get_index("FERRY_NO_SUCH_THING", &idx), MPI_T_ERR_INVALID_NAME);
    TEQ(MPI_T_cvar_handle_alloc(n, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
    TEQ(MPI_T_cvar_get_index("FERRY_THREAD_LEVEL", &idx), MPI_SUCCESS);
    TEQ(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count), MPI_SUCCESS);
    char *level = malloc(count);
    TEQ(MPI_T_cvar_read(h, level), MPI_SUCCESS);
    TRUE(strlen(level) > 0 && strlen(level) < (size_t)count);
    free(level);
    TEQ(MPI_T_cvar_handle_free(&h), MPI_SUCCESS);

    /* Performance variables: zero before MPI_Init, counting after. */
    int np;
    TEQ(MPI_T_pvar_get_num(&np), MPI_SUCCESS);
    TRUE(np >= 20);
    TEQ(MPI_T_pvar_get_index("ferry_eager_sent", MPI_T_PVAR_CLASS_COUNTER, &idx), MPI_SUCCESS);
    int cls, ro, cont, atomic;
    char pname[64];
    int plen = sizeof pname;
    TEQ(MPI_T_pvar_get_info(idx, pname, &plen, NULL, &cls, NULL, NULL, NULL, NULL, NULL, &ro, &cont, &atomic), MPI_SUCCESS);
    TRUE(strcmp(pname, "ferry_eager_sent") == 0);
    EQ(cls, MPI_T_PVAR_CLASS_COUNTER); EQ(ro, 1); EQ(cont, 1); EQ(atomic, 0);
    MPI_T_pvar_session s;
    MPI_T_pvar_handle ph;
    TEQ(MPI_T_pvar_session_create(&s), MPI_SUCCESS);
    TEQ(MPI_T_pvar_handle_alloc(s, idx, NULL, &ph, &count), MPI_SUCCESS);
    EQ(count, 1);
    unsigned long long before = 1, after = 0;
    TEQ(MPI_T_pvar_read(s, ph, &before), MPI_SUCCESS);
    EQ(before, 0);

    check_init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    TEQ(MPI_T_pvar_read(s, ph, &before), MPI_SUCCESS);
    int to = (rank + 1) % size, from = (rank + size - 1) % size, x = rank, y;
    for (int i = 0; i < 10; i++)
        OK(MPI_Sendrecv(&x, 1, MPI_INT, to, 5, &y, 1, MPI_INT, from, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    TEQ(MPI_T_pvar_read(s, ph, &after), MPI_SUCCESS);
    TRUE(after >= before + 10);
    TEQ(MPI_T_pvar_start(s, ph), MPI_T_ERR_PVAR_NO_STARTSTOP);
    TEQ(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    TEQ(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    TEQ(MPI_T_pvar_write(s, ph, &after), MPI_T_ERR_PVAR_NO_WRITE);
    TEQ(MPI_T_pvar_reset(s, ph), MPI_T_ERR_PVAR_NO_WRITE);
    TEQ(MPI_T_pvar_readreset(s, ph, &after), MPI_T_ERR_PVAR_NO_ATOMIC);
    TEQ(MPI_T_pvar_read(MPI_T_PVAR_SESSION_NULL, ph, &after), MPI_T_ERR_INVALID_SESSION);
    TEQ(MPI_T_pvar_handle_free(s, &ph), MPI_SUCCESS);
    TRUE(ph == MPI_T_PVAR_HANDLE_NULL);
    TEQ(MPI_T_pvar_read(s, ph, &after), MPI_T_ERR_INVALID_HANDLE);
    TEQ(MPI_T_pvar_session_free(&s), MPI_SUCCESS);
    TRUE(s == MPI_T_PVAR_SESSION_NULL);

    /* Categories, events, sources, enumerations. */
    int ncat, nc, npv, nsub, cats[32];
    TEQ(MPI_T_category_get_num(&ncat), MPI_SUCCESS);
    EQ(ncat, 2);
    TEQ(MPI_T_category_get_index("ferry_counters", &idx), MPI_SUCCESS);
    EQ(idx, 1);
    TEQ(MPI_T_category_get_info(0, NULL, NULL, NULL, NULL, &nc, &npv, &nsub), MPI_SUCCESS);
    EQ(nc, n); EQ(npv, 0); EQ(nsub, 0);
    TEQ(MPI_T_category_get_info(1, NULL, NULL, NULL, NULL, &nc, &npv, &nsub), MPI_SUCCESS);
    EQ(nc, 0); EQ(npv, np);
    TEQ(MPI_T_category_get_pvars(1, 32, cats), MPI_SUCCESS);
    EQ(cats[3], 3);
    TEQ(MPI_T_category_get_info(2, NULL, NULL, NULL, NULL, &nc, &npv, &nsub), MPI_T_ERR_INVALID_INDEX);
    int ev, src, upd;
    TEQ(MPI_T_event_get_num(&ev), MPI_SUCCESS); EQ(ev, 0);
    TEQ(MPI_T_source_get_num(&src), MPI_SUCCESS); EQ(src, 0);
    TEQ(MPI_T_category_changed(&upd), MPI_SUCCESS);
    MPI_T_event_registration reg;
    TEQ(MPI_T_event_get_info(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    TEQ(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);
    TEQ(MPI_T_source_get_info(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    TEQ(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &nc, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    char str[MPI_MAX_ERROR_STRING];
    int slen;
    OK(MPI_Error_string(MPI_T_ERR_INVALID_NAME, str, &slen));
    TRUE(strstr(str, "MPI_T_ERR_INVALID_NAME") != NULL);
    OK(MPI_Error_string(MPI_ERR_ABI, str, &slen));

    TEQ(MPI_T_finalize(), MPI_SUCCESS);
    TEQ(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    check_done("mpit");
    return 0;
}
