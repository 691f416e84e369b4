@pooler
Feature: Pooling client connections
  pg_doorman stands between the applications and PostgreSQL: many clients
  share a few server connections, and a client sees the errors PostgreSQL
  would give it.

  Background:
    Given a PostgreSQL server
    And a PostgreSQL user "app" with password "app-secret" stored as SCRAM
    And a database "appdb" with a table "items" that "app" may write to

  Scenario: A client works through pg_doorman in transaction mode
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    When 10 clients each run 20 transactions on "appdb" as "app" with password "app-secret"
    Then all 200 transactions succeed
    And table "items" of database "appdb" has 200 rows
    And PostgreSQL showed at most 2 connections of user "app" during the run

  Scenario: A wrong password is refused with SQLSTATE 28P01
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    Then a client connecting to "appdb" as "app" with password "not-the-password" is refused with SQLSTATE "28P01"
    And a client connecting to "appdb" as "nobody" with password "app-secret" is refused with SQLSTATE "28P01"
    And PostgreSQL has no connections of user "app"

  Scenario: A database pg_doorman does not serve is refused with SQLSTATE 3D000
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    Then a client connecting to "otherdb" as "app" with password "app-secret" is refused with SQLSTATE "3D000"

  Scenario: A killed backend inside a transaction gives the client an error within 1 second
    Given pg_doorman serves database "appdb" to user "app" in transaction mode with pool_size 2
    And client "alice" connects to "appdb" as "app" with password "app-secret"
    And client "alice" is inside a transaction running "SELECT pg_sleep(30)"
    When the PostgreSQL backend serving client "alice" is killed
    Then client "alice" gets an error within 1s
    And a new client can run "SELECT 1" on "appdb" as "app" with password "app-secret"
