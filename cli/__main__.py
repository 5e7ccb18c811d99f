from kafka_coop.cli.main import main

main()
