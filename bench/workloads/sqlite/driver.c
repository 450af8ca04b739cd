/* SQLite workload for the wpp real-workload benchmark (the bundled amalgamation has no shell).
 *
 *   sqlite-driver [N]
 *
 * Builds an in-memory database scaled by N (1 = small, CI) and runs a fixed set of statements:
 * prepared inserts in a transaction, secondary indexes, joins, GROUP BY/HAVING, ORDER BY, a
 * recursive CTE, a window function, UPDATE/DELETE, subqueries and string functions. Every result
 * row is printed, so the output is the check: it is deterministic (our own PRNG; compile with
 * SQLITE_OMIT_RANDOMNESS so nothing reads /dev/urandom, and SQLITE_TEMP_STORE=3 so sorts never
 * spill to temporary files). */
#include <stdio.h>
#include <stdlib.h>

#include "sqlite3.h"

static sqlite3 *db;
static unsigned long long rows_printed;

static int print_row(void *unused, int n, char **vals, char **names) {
    (void)unused;
    (void)names;
    for (int i = 0; i < n; i++) printf("%s%s", i ? "|" : "", vals[i] ? vals[i] : "NULL");
    putchar('\n');
    rows_printed++;
    return 0;
}

static void die(const char *what) {
    fprintf(stderr, "sqlite-driver: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(const char *title, const char *sql) {
    char *err = NULL;
    if (title) printf("-- %s\n", title);
    if (sqlite3_exec(db, sql, title ? print_row : NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "sqlite-driver: %s\n  in: %s\n", err ? err : "?", sql);
        exit(1);
    }
}

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static unsigned rnd(unsigned m) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % m;
}

static const char *const syllables[] = {"ka", "lo", "mi", "nu", "pe", "ra", "si", "to",
                                        "va", "ze", "bo", "du", "fi", "gu", "he", "jo"};

static void make_name(char *buf, size_t cap, unsigned parts) {
    size_t len = 0;
    buf[0] = 0;
    for (unsigned i = 0; i < parts && len + 3 < cap; i++) {
        const char *s = syllables[rnd(16)];
        buf[len++] = s[0];
        buf[len++] = s[1];
        buf[len] = 0;
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    if (n < 1) n = 1;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) die("open");

    exec(NULL,
         "CREATE TABLE region(id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
         "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL, region INTEGER,"
         "  since INTEGER);"
         "CREATE TABLE product(id INTEGER PRIMARY KEY, name TEXT, price INTEGER, category TEXT);"
         "CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, product INTEGER,"
         "  qty INTEGER, day INTEGER, note TEXT);");

    int regions = 12, customers = 800 * n, products = 300, orders = 6000 * n;
    sqlite3_stmt *st;
    char buf[128];

    exec(NULL, "BEGIN");
    if (sqlite3_prepare_v2(db, "INSERT INTO region(id, name) VALUES(?1, ?2)", -1, &st, 0)) die("prep");
    for (int i = 1; i <= regions; i++) {
        make_name(buf, sizeof buf, 3);
        sqlite3_bind_int(st, 1, i);
        sqlite3_bind_text(st, 2, buf, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) != SQLITE_DONE) die("insert region");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db, "INSERT INTO customer(name, region, since) VALUES(?1, ?2, ?3)", -1,
                           &st, 0))
        die("prep");
    for (int i = 0; i < customers; i++) {
        make_name(buf, sizeof buf, 2 + rnd(4));
        sqlite3_bind_text(st, 1, buf, -1, SQLITE_TRANSIENT);
        if (i % 23 == 0)
            sqlite3_bind_null(st, 2);
        else
            sqlite3_bind_int(st, 2, 1 + (int)rnd(regions));
        sqlite3_bind_int(st, 3, 2000 + (int)rnd(25));
        if (sqlite3_step(st) != SQLITE_DONE) die("insert customer");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db, "INSERT INTO product(name, price, category) VALUES(?1, ?2, ?3)", -1,
                           &st, 0))
        die("prep");
    for (int i = 0; i < products; i++) {
        make_name(buf, sizeof buf, 4);
        sqlite3_bind_text(st, 1, buf, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 2, 1 + (int)rnd(5000));
        snprintf(buf, sizeof buf, "cat-%c", 'a' + (int)rnd(9));
        sqlite3_bind_text(st, 3, buf, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) != SQLITE_DONE) die("insert product");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO orders(customer, product, qty, day, note)"
                           " VALUES(?1, ?2, ?3, ?4, ?5)",
                           -1, &st, 0))
        die("prep");
    for (int i = 0; i < orders; i++) {
        /* skewed customer choice: a few very active customers */
        unsigned c = rnd(4) == 0 ? 1 + rnd(20) : 1 + rnd((unsigned)customers);
        sqlite3_bind_int(st, 1, (int)c);
        sqlite3_bind_int(st, 2, 1 + (int)rnd(products));
        sqlite3_bind_int(st, 3, 1 + (int)rnd(9));
        sqlite3_bind_int(st, 4, (int)rnd(365));
        if (rnd(5) == 0) {
            make_name(buf, sizeof buf, 1 + rnd(8));
            sqlite3_bind_text(st, 5, buf, -1, SQLITE_TRANSIENT);
        } else {
            sqlite3_bind_null(st, 5);
        }
        if (sqlite3_step(st) != SQLITE_DONE) die("insert orders");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    exec(NULL, "COMMIT");

    exec(NULL,
         "CREATE INDEX orders_customer ON orders(customer);"
         "CREATE INDEX orders_product_day ON orders(product, day);"
         "CREATE INDEX customer_region ON customer(region, name);");

    exec("counts",
         "SELECT (SELECT count(*) FROM region), (SELECT count(*) FROM customer),"
         " (SELECT count(*) FROM product), (SELECT count(*) FROM orders)");
    exec("revenue per region (join, GROUP BY)",
         "SELECT coalesce(r.name, '(none)'), count(*), sum(o.qty * p.price), max(o.qty * p.price)"
         " FROM orders o JOIN customer c ON c.id = o.customer"
         " JOIN product p ON p.id = o.product LEFT JOIN region r ON r.id = c.region"
         " GROUP BY r.id ORDER BY r.id");
    exec("top customers (GROUP BY, HAVING, ORDER BY, LIMIT)",
         "SELECT c.id, c.name, count(*) AS n, sum(o.qty) FROM customer c"
         " JOIN orders o ON o.customer = c.id GROUP BY c.id HAVING n >= 3"
         " ORDER BY n DESC, c.id LIMIT 10");
    exec("categories (aggregates, printf)",
         "SELECT p.category, count(DISTINCT o.customer), printf('%.2f', avg(o.qty)),"
         " total(o.qty * p.price) FROM orders o JOIN product p ON p.id = o.product"
         " GROUP BY p.category ORDER BY p.category");
    exec("index range scan",
         "SELECT product, count(*), min(day), max(day) FROM orders"
         " WHERE product BETWEEN 10 AND 20 AND day < 100 GROUP BY product ORDER BY product");
    exec("recursive CTE (series)",
         "WITH RECURSIVE seq(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM seq WHERE x < 20000)"
         " SELECT count(*), sum(x % 7), sum(x * x % 1000) FROM seq");
    exec("recursive CTE (collatz lengths)",
         "WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < 300),"
         " c(start, v, steps) AS ("
         "  SELECT value, value, 0 FROM s"
         "  UNION ALL SELECT start, CASE WHEN v % 2 THEN 3 * v + 1 ELSE v / 2 END, steps + 1"
         "  FROM c WHERE v > 1)"
         " SELECT start, max(steps) FROM c GROUP BY start ORDER BY max(steps) DESC, start LIMIT 5");
    exec("window function (running totals)",
         "SELECT day, n, sum(n) OVER (ORDER BY day ROWS BETWEEN 6 PRECEDING AND CURRENT ROW)"
         " FROM (SELECT day, count(*) AS n FROM orders GROUP BY day) ORDER BY day LIMIT 12");
    exec("update + delete",
         "UPDATE product SET price = price * 2 WHERE category IN ('cat-a', 'cat-e');"
         "DELETE FROM orders WHERE qty = 1 AND day % 3 = 0;"
         "SELECT count(*), sum(qty) FROM orders");
    exec("correlated subquery + string functions",
         "SELECT upper(substr(name, 1, 4)), length(name), instr(name, 'ka'), replace(name, 'o', '0')"
         " FROM customer c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer = c.id AND o.qty = 9"
         " AND o.day < 30) ORDER BY name, id LIMIT 8");
    exec("notes (LIKE, GROUP BY length)",
         "SELECT length(note), count(*) FROM orders WHERE note LIKE '%ka%' GROUP BY 1 ORDER BY 1");
    exec("integrity", "PRAGMA integrity_check");

    printf("-- rows printed: %llu\n", rows_printed + 1);
    sqlite3_close(db);
    return fflush(stdout) == 0 ? 0 : 1;
}
