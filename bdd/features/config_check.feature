@config
Feature: Checking a configuration file
  `pg_doorman -t FILE` validates a configuration without starting the
  pooler, so that a deployment refuses a broken file before a restart or a
  reload does. Exit code 0 means valid, 1 invalid; every problem is named
  by its key path.

  Scenario: A valid configuration passes the check
    Given a configuration file "good.yaml":
      """
      general:
        host: 127.0.0.1
        port: 6432
        admin_username: admin
        admin_password: admin-secret
      pools:
        appdb:
          server_host: 127.0.0.1
          server_port: 5432
          pool_mode: transaction
          users:
            - username: app
              password: "md5c4ca4238a0b923820dcc509a6f75849b"
              pool_size: 10
      """
    When I run "pg_doorman -t good.yaml"
    Then the exit code is 0
    And the output contains "good.yaml is valid"

  Scenario: An unknown key fails the check and is named by its path
    Given a configuration file "bad.yaml":
      """
      general:
        host: 127.0.0.1
        port: 6432
        admin_username: admin
        admin_password: admin-secret
      pools:
        appdb:
          server_host: 127.0.0.1
          server_port: 5432
          users:
            - username: app
              password: "md5c4ca4238a0b923820dcc509a6f75849b"
              pool_sise: 10
      """
    When I run "pg_doorman -t bad.yaml"
    Then the exit code is 1
    And the output contains "pools.appdb.users[0].pool_sise"
    And the output contains "unknown key"

  Scenario: A missing file fails the check
    When I run "pg_doorman -t missing.yaml"
    Then the exit code is 1
    And the output contains "missing.yaml"
