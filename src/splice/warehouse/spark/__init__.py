"""Apache Spark, through Spark Connect: the connection and a local server of Splice's own."""
