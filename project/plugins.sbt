addSbtPlugin("com.eed3si9n" % "sbt-assembly" % "2.3.1")
// Copies zip entries without inflating them (KplResources: the KPL's daemons bypass the assembly).
libraryDependencies += "org.apache.commons" % "commons-compress" % "1.28.0"
addSbtPlugin("org.scalameta" % "sbt-scalafmt" % "2.5.6")
addSbtPlugin("pl.project13.scala" % "sbt-jmh" % "0.4.8")
// Signs what a release stages (publishSigned): the gpg command line, with the key of GNUPGHOME (docs/development.md,
// "Releasing"). Not sbt-ci-release: the version comes from _version.py (one bump step), not from git tags.
addSbtPlugin("com.github.sbt" % "sbt-pgp" % "2.3.1")
