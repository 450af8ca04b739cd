/* SQLite workload (the bundled amalgamation has no shell): inserts, an index, a join, GROUP BY
 * and a recursive CTE on an in-memory database. Scale with the first argument. */
#include <stdio.h>
#include <stdlib.h>
#include "sqlite3.h"

static int print_row(void *unused, int n, char **vals, char **names) {
    (void)unused;
    (void)names;
    for (int i = 0; i < n; i++) printf("%s%s", i ? "|" : "", vals[i] ? vals[i] : "NULL");
    printf("\n");
    return 0;
}

static void exec(sqlite3 *db, const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(db, sql, print_row, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "sqlite: %s\n", err);
        exit(1);
    }
}

int main(int argc, char **argv) {
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    sqlite3 *db;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
    exec(db, "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, region INTEGER);"
             "CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, amount INTEGER,"
             " item TEXT);");
    sqlite3_stmt *ins_c, *ins_o;
    sqlite3_prepare_v2(db, "INSERT INTO customer(name, region) VALUES(?1, ?2)", -1, &ins_c, 0);
    sqlite3_prepare_v2(db, "INSERT INTO orders(customer, amount, item) VALUES(?1, ?2, ?3)", -1,
                       &ins_o, 0);
    exec(db, "BEGIN");
    unsigned seed = 7;
    int customers = 2000 * scale, orders = 20000 * scale;
    char buf[64];
    for (int i = 0; i < customers; i++) {
        snprintf(buf, sizeof buf, "customer-%d", i);
        sqlite3_bind_text(ins_c, 1, buf, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(ins_c, 2, i % 17);
        sqlite3_step(ins_c);
        sqlite3_reset(ins_c);
    }
    for (int i = 0; i < orders; i++) {
        seed = seed * 1103515245u + 12345u;
        snprintf(buf, sizeof buf, "item-%u", (seed >> 8) % 500);
        sqlite3_bind_int(ins_o, 1, 1 + (int)((seed >> 4) % (unsigned)customers));
        sqlite3_bind_int(ins_o, 2, (int)((seed >> 12) % 1000));
        sqlite3_bind_text(ins_o, 3, buf, -1, SQLITE_TRANSIENT);
        sqlite3_step(ins_o);
        sqlite3_reset(ins_o);
    }
    exec(db, "COMMIT");
    sqlite3_finalize(ins_c);
    sqlite3_finalize(ins_o);
    exec(db, "CREATE INDEX orders_customer ON orders(customer)");
    exec(db, "SELECT c.region, count(*), sum(o.amount), max(o.amount) FROM customer c"
             " JOIN orders o ON o.customer = c.id GROUP BY c.region ORDER BY c.region");
    exec(db, "SELECT item, count(*) AS n FROM orders GROUP BY item ORDER BY n DESC, item LIMIT 5");
    exec(db, "WITH RECURSIVE seq(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM seq WHERE x < 50000)"
             " SELECT count(*), sum(x % 7) FROM seq");
    exec(db, "SELECT name FROM customer WHERE id IN (SELECT customer FROM orders WHERE amount > 995)"
             " ORDER BY name LIMIT 3");
    sqlite3_close(db);
    return 0;
}
