# The one version source: build.sbt reads it too (".devN" becomes Maven's "-SNAPSHOT").
__version__ = "0.1.0.dev0"
