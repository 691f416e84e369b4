@admin
Feature: Admin console
  The admin connects to the virtual database "pgdoorman" with
  admin_username and admin_password and runs PgBouncer-style SHOW
  commands.

  Background:
    Given a PostgreSQL server
    And a PostgreSQL user "app" with password "app-secret" stored as SCRAM
    And a database "appdb" with a table "items" that "app" may write to

  Scenario: SHOW POOLS lists the pool
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "alice" connects to "appdb" as "app" with password "app-secret"
    And client "alice" runs "SELECT current_user" and gets "app"
    When the admin runs "SHOW POOLS" on the admin console
    Then the result has a row where "database" is "appdb" and "user" is "app"

  Scenario: SHOW POOLS tells idle clients from active ones
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "alice" connects to "appdb" as "app" with password "app-secret"
    And client "alice" runs "SELECT current_user" and gets "app"
    When the admin runs "SHOW POOLS" on the admin console
    Then the result has the columns "database user cl_active cl_waiting sv_active sv_idle sv_used maxwait pool_mode paused cl_idle" in this order
    And the pool "appdb" of user "app" shows cl_active = 1
    And the pool "appdb" of user "app" shows cl_idle = 1
    And the pool "appdb" of user "app" shows sv_active = 0
    And the pool "appdb" of user "app" shows sv_idle = 1

  Scenario: SHOW POOLS_EXTENDED shows traffic and latency percentiles
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "alice" connects to "appdb" as "app" with password "app-secret"
    And client "alice" runs "SELECT 'ok' FROM pg_sleep(0.005)" and gets "ok"
    And client "alice" runs "SELECT 'ok' FROM pg_sleep(0.005)" and gets "ok"
    When the admin runs "SHOW POOLS_EXTENDED" on the admin console
    Then the result has the columns "database user cl_active sv_idle pool_mode cl_idle bytes_received bytes_sent avg_wait_time_ms xact_p50_ms xact_p99_ms query_p50_ms query_p99_ms" in this order
    And the pool "appdb" of user "app" shows bytes_received >= 1
    And the pool "appdb" of user "app" shows bytes_sent >= 1
    And the pool "appdb" of user "app" shows xact_p50_ms >= 4
    And the pool "appdb" of user "app" shows query_p99_ms >= 4

  Scenario: SHOW POOLS_MEMORY shows what a pool holds
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "alice" connects to "appdb" as "app" with password "app-secret"
    And client "alice" runs "SELECT current_user" and gets "app"
    When the admin runs "SHOW POOLS_MEMORY" on the admin console
    Then the pool "appdb" of user "app" shows server_connections = 1
    And the pool "appdb" of user "app" shows server_read_buffers_bytes = 8192
    And the pool "appdb" of user "app" shows prepared_statements_count = 0

  Scenario: SHOW CONNECTIONS counts client connections by kind
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "alice" connects to "appdb" as "app" with password "app-secret"
    And client "alice" runs "SELECT current_user" and gets "app"
    When the admin runs "SHOW CONNECTIONS" on the admin console
    Then the answer shows plain >= 2
    And the answer shows tls = 0
    And the answer shows total >= 2
    And the answer shows clients >= 2
    And the answer shows servers = 1

  Scenario: SHOW SOCKETS counts pg_doorman's sockets by state
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "alice" connects to "appdb" as "app" with password "app-secret"
    And client "alice" runs "SELECT current_user" and gets "app"
    When the admin runs "SHOW SOCKETS" on the admin console
    Then the answer shows tcp_listen >= 1
    And the answer shows tcp_established >= 2
    And the answer shows unix_unconnected >= 1

  Scenario: SHOW POOL_SCALING names its counters as the documentation does
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    When the admin runs "SHOW POOL_SCALING" on the admin console
    Then the result has the columns "user database inflight creates gate_waits burst_gate_budget_ex antic_notify antic_timeout create_fallback replenish_def" in this order
    And the result has a row where "database" is "appdb" and "user" is "app"

  Scenario: A wrong admin password is refused
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    Then a client connecting to "pgdoorman" as "admin" with password "wrong" is refused with SQLSTATE "28P01"
