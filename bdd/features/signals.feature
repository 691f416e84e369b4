@signals
Feature: Reloading and stopping pg_doorman with signals
  SIGHUP rereads the configuration file without dropping clients; a file
  that does not validate is refused and the running configuration stays.
  SIGTERM stops accepting clients, closes idle ones, lets transactions in
  flight finish for up to shutdown_timeout, and exits.

  Background:
    Given a PostgreSQL server
    And a PostgreSQL user "app" with password "app-secret" stored as SCRAM
    And a database "appdb" with a table "items" that "app" may write to

  Scenario: Reload on SIGHUP adds a pool
    Given a database "reports" with a table "items" that "app" may write to
    And pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "alice" connects to "appdb" as "app" with password "app-secret"
    And a client connecting to "reports" as "app" with password "app-secret" is refused with SQLSTATE "3D000"
    When pool "reports" for user "app" with pool_size 2 is added to the configuration file
    And pg_doorman receives SIGHUP
    Then within 5s client "bob" connects to "reports" as "app" with password "app-secret"
    And client "bob" runs "SELECT current_database()" and gets "reports"
    And client "alice" runs "SELECT current_database()" and gets "appdb"
    And pg_doorman is still running

  Scenario: A broken file on SIGHUP keeps the running configuration
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    When the configuration file gets the unknown key "general.bogus_key"
    And pg_doorman receives SIGHUP
    Then within 5s the pg_doorman log mentions "bogus_key"
    And a new client can run "SELECT 1" on "appdb" as "app" with password "app-secret"
    And pg_doorman is still running

  Scenario: Graceful shutdown on SIGTERM
    Given pg_doorman with shutdown_timeout 2s serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "idle" connects to "appdb" as "app" with password "app-secret"
    And client "busy" connects to "appdb" as "app" with password "app-secret"
    And client "busy" begins a transaction and inserts a row into "items"
    When pg_doorman receives SIGTERM
    Then client "idle" is disconnected with SQLSTATE "58006" within 1s
    And no new client can connect to "appdb" as "app" with password "app-secret"
    And client "busy" commits successfully
    And pg_doorman exits with code 0 within 2.5s of the signal
    And table "items" of database "appdb" has 1 row

  Scenario: pg_doorman exits as soon as the last transaction of a shutdown ends
    Given pg_doorman with shutdown_timeout 10s serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "busy" connects to "appdb" as "app" with password "app-secret"
    And client "busy" begins a transaction and inserts a row into "items"
    When pg_doorman receives SIGTERM
    And client "busy" commits successfully
    Then pg_doorman exits with code 0 within 1s of the last commit
    And client "busy" is disconnected within 1s

  Scenario: A transaction that outlives shutdown_timeout is cut
    Given pg_doorman with shutdown_timeout 500ms serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "slow" connects to "appdb" as "app" with password "app-secret"
    And client "slow" begins a transaction and inserts a row into "items"
    When pg_doorman receives SIGTERM
    Then pg_doorman exits with code 0 within 1s of the signal
    And client "slow" cannot commit
    And table "items" of database "appdb" has 0 rows
