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

  Scenario: A wrong admin password is refused
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    Then a client connecting to "pgdoorman" as "admin" with password "wrong" is refused with SQLSTATE "28P01"
